// Command freeport prints a TCP port on 127.0.0.1 that is free right now, for
// .ci/run to start its own redis-server on.
package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "freeport:", err)
		os.Exit(1)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
}
