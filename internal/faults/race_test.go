//go:build race

package faults

// raceEnabled: the tests are built with -race, so the bot is too.
const raceEnabled = true
