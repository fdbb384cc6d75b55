// Command freeport prints TCP ports on 127.0.0.1 that are free right now,
// for .ci/run to start its own redis-servers on: one, or n distinct ones
// with "freeport n" (each held open until all are found, so none repeats:
// a Redis Cluster needs three nodes and their three bus ports).
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

func main() {
	n := 1
	if len(os.Args) > 1 {
		var err error
		if n, err = strconv.Atoi(os.Args[1]); err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "usage: freeport [n]")
			os.Exit(2)
		}
	}
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "freeport:", err)
			os.Exit(1)
		}
		defer l.Close()
		fmt.Println(l.Addr().(*net.TCPAddr).Port)
	}
}
