package agent

import (
	_ "embed"
	"encoding/json"
	"strings"
)

// The digester agent's source; %E% is replaced by the report endpoint
// and %T% by the report token, both as JavaScript strings.
//
//go:embed agent.js
var digesterSource string

// ScriptBudget is the most bytes the digester agent may take, so that it
// never weighs on the page that embeds it (a test holds it to this).
const ScriptBudget = 6 << 10

// voidAgent is sent when the page was summarised recently: it does nothing.
var voidAgent = []byte("/* changedigest: nothing to do */\n")

var digesterParts = func() [3]string {
	e := strings.Index(digesterSource, `"%E%"`)
	t := strings.Index(digesterSource, `"%T%"`)
	if e < 0 || t < e {
		panic("agent: agent.js lacks its placeholders")
	}
	return [3]string{digesterSource[:e], digesterSource[e+5 : t], digesterSource[t+5:]}
}()

// digesterAgent is the digester with its endpoint and token filled in.
func digesterAgent(endpoint, token string) []byte {
	e, _ := json.Marshal(endpoint)
	t, _ := json.Marshal(token)
	p := digesterParts
	b := make([]byte, 0, len(p[0])+len(p[1])+len(p[2])+len(e)+len(t))
	b = append(b, p[0]...)
	b = append(b, e...)
	b = append(b, p[1]...)
	b = append(b, t...)
	return append(b, p[2]...)
}

// IsVoid reports whether script is the void agent.
func IsVoid(script []byte) bool { return string(script) == string(voidAgent) }
