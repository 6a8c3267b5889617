package server

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool call whose arguments break the tool's input schema is refused by
// the SDK before the tool's handler runs. invalidArgs makes that refusal
// look like every other tool error: a message that says what to send (the
// SDK's quotes the validator, "maximum: 21/1 is greater than 20.000000"),
// counted in the metrics and written to the audit log with outcome
// "invalid" (it was counted nowhere and audited as "ok").

// reachedKey marks a tool call's context; addTool's wrapper sets the flag
// it holds, so invalidArgs can tell a refusal by the SDK from the tool's own
// error.
type reachedKey struct{}

func markReached(ctx context.Context) {
	if p, ok := ctx.Value(reachedKey{}).(*bool); ok {
		*p = true
	}
}

func (s *Server) invalidArgs(fallback *identity) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return s.invalidArgsHandler(next, fallback)
	}
}

func (s *Server) invalidArgsHandler(next mcp.MethodHandler, fallback *identity) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || method != "tools/call" {
			return next(ctx, method, req)
		}
		start := s.opt.Now()
		reached := new(bool)
		res, err := next(context.WithValue(ctx, reachedKey{}, reached), method, req)
		r, ok := res.(*mcp.CallToolResult)
		if *reached || call.Params == nil {
			return res, err
		}
		tool, outcome := call.Params.Name, "invalid"
		switch {
		case err != nil && (!ok || r == nil):
			// No such tool (the SDK answers with a JSON-RPC error). The
			// name the client sent is not a metrics label.
			tool, outcome = "unknown", "not_found"
		case !ok || r == nil || !r.IsError:
			return res, err
		default:
			for _, c := range r.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					t.Text = s.argsMessage(tool, t.Text)
				}
			}
		}
		s.metrics.tools.add(1, tool, outcome)
		s.metrics.toolLatency.observe(s.opt.Now().Sub(start), tool)
		c, _ := callerOf(call, fallback)
		if c.ri != nil {
			c.ri.set(func(ri *reqInfo) { ri.tool, ri.errCode = tool, outcome })
		} else {
			who := "-"
			if c.id != nil {
				who = c.id.name
			}
			zero := 0
			s.audit.write(auditLine{Time: start.UTC().Format(time.RFC3339Nano), RequestID: newRequestID(),
				Token: who, Remote: "stdio", Route: "mcp tools/call", Tool: tool, Status: 200,
				Outcome: outcome, Results: &zero, Millis: s.opt.Now().Sub(start).Milliseconds()})
		}
		return res, err
	}
}

var (
	propertyRE   = regexp.MustCompile(`validating /properties/([A-Za-z_]+): ([A-Za-z]+): `)
	requiredRE   = regexp.MustCompile(`required: missing properties: \[(.*?)\]`)
	additionalRE = regexp.MustCompile(`unexpected additional properties \[(.*?)\]`)
)

// argsMessage rewrites the SDK's validation message for tool in terms of the
// tool's schema: what the argument must be. A message it cannot read comes
// back without the validator's prefix.
func (s *Server) argsMessage(tool, msg string) string {
	in := s.schemas[tool]
	if strings.Contains(msg, "unmarshaling arguments") {
		// The SDK names the Go type it could not fill.
		return "arguments must be an object"
	}
	if m := requiredRE.FindStringSubmatch(msg); m != nil {
		return names(m[1]) + " is required"
	}
	if m := additionalRE.FindStringSubmatch(msg); m != nil && in != nil {
		if len(in.Properties) == 0 {
			return fmt.Sprintf("unknown argument %s: %s takes no arguments", names(m[1]), tool)
		}
		return fmt.Sprintf("unknown argument %s: %s takes %s", names(m[1]), tool, strings.Join(slices.Sorted(maps.Keys(in.Properties)), ", "))
	}
	m := propertyRE.FindStringSubmatch(msg)
	if m == nil || in == nil || in.Properties[m[1]] == nil {
		return strings.TrimPrefix(msg, `validating "arguments": validating root: `)
	}
	name, p := m[1], in.Properties[m[1]]
	switch m[2] {
	case "minimum", "maximum":
		if p.Minimum != nil && p.Maximum != nil {
			return fmt.Sprintf("%s must be between %s and %s", name, plainNum(*p.Minimum), plainNum(*p.Maximum))
		}
	case "minLength", "maxLength":
		switch {
		case p.MinLength != nil && *p.MinLength > 0 && m[2] == "minLength":
			return name + " must not be empty"
		case p.MaxLength != nil:
			return fmt.Sprintf("%s must be at most %d characters", name, *p.MaxLength)
		}
	case "enum":
		var vals []string
		for _, v := range p.Enum {
			vals = append(vals, fmt.Sprint(v))
		}
		return fmt.Sprintf("%s must be one of %s", name, strings.Join(vals, ", "))
	case "type":
		return fmt.Sprintf("%s must be %s", name, withArticle(p.Type))
	}
	return strings.TrimPrefix(msg, `validating "arguments": validating root: `)
}

// names turns `"a", "b"` (as the validator quotes them) into a, b.
func names(quoted string) string {
	return strings.ReplaceAll(quoted, `"`, "")
}

// withArticle puts "a" or "an" before a JSON type's name.
func withArticle(typ string) string {
	if typ != "" && strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

// plainNum writes a bound as a reader would, 1000000000 where num (for
// metrics) writes 1e+09.
func plainNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
