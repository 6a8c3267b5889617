//go:build !amd64 || purego

package kernel

func archImpls() []impl { return nil }
