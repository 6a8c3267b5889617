//go:build race

package vindex

// raceEnabled shrinks tests whose brute-force reference runs ten times
// slower under the race detector.
const raceEnabled = true
