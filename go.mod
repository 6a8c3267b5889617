module github.com/recall-mcp/recall

go 1.26.8

require (
	golang.org/x/sys v0.49.0
	golang.org/x/text v0.44.0
)
