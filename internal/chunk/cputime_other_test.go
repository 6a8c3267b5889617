//go:build !unix

package chunk

func cpuSeconds() float64 { return 0 }
