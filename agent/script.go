package agent

import (
	"bytes"
	"compress/flate"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
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

// gzipDigester sends the digester gzip-encoded without compressing it per
// request: the parts before and after the token are compressed once, and
// each answer joins them around the token in a stored deflate block.
// That is valid deflate because the first part ends on a sync flush
// (byte-aligned, not final) and the last part is a stream of its own that
// refers to nothing before it. The answer is under half the plain
// script's size, which also lets the server send headers and body in one
// write.
type gzipDigester struct {
	endpoint string
	// head is the gzip header and the compressed script up to the
	// token; tail the compressed rest, final block included.
	head, tail []byte
	// headCRC and headLen are the CRC-32 and length of the plain head;
	// tailPlain is the plain rest, for the CRC.
	headCRC   uint32
	headLen   int
	tailPlain []byte
}

func newGzipDigester(endpoint string) *gzipDigester {
	e, _ := json.Marshal(endpoint)
	p := digesterParts
	plainHead := p[0] + string(e) + p[1]
	g := &gzipDigester{endpoint: endpoint, tailPlain: []byte(p[2]), headLen: len(plainHead),
		headCRC: crc32.ChecksumIEEE([]byte(plainHead))}
	// Header: magic, deflate, no flags, no time, no extra flags, unknown OS.
	head := bytes.NewBuffer([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255})
	zw, _ := flate.NewWriter(head, flate.BestCompression)
	zw.Write([]byte(plainHead))
	zw.Flush()
	g.head = head.Bytes()
	var tail bytes.Buffer
	zw.Reset(&tail)
	zw.Write([]byte(p[2]))
	zw.Close()
	g.tail = tail.Bytes()
	return g
}

// script is the digester with token, gzip-encoded.
func (g *gzipDigester) script(token string) []byte {
	t, _ := json.Marshal(token)
	b := make([]byte, 0, len(g.head)+5+len(t)+len(g.tail)+8)
	b = append(b, g.head...)
	// A stored block, not final: header byte, LEN and NLEN, the bytes.
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(t)))
	b = binary.LittleEndian.AppendUint16(b, ^uint16(len(t)))
	b = append(b, t...)
	b = append(b, g.tail...)
	crc := crc32.Update(g.headCRC, crc32.IEEETable, t)
	crc = crc32.Update(crc, crc32.IEEETable, g.tailPlain)
	b = binary.LittleEndian.AppendUint32(b, crc)
	return binary.LittleEndian.AppendUint32(b, uint32(g.headLen+len(t)+len(g.tailPlain)))
}
