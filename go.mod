module github.com/recall-mcp/recall

go 1.26.8

require (
	github.com/rivo/uniseg v0.4.7
	golang.org/x/sys v0.49.0
	golang.org/x/text v0.44.0
)
