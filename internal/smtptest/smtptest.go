// Package smtptest is an in-process SMTP server on loopback for tests: it
// accepts every message and keeps it.
package smtptest

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
)

// Message is one accepted message.
type Message struct {
	From string
	To   []string
	Data string
}

// Server is a minimal SMTP server (EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT).
type Server struct {
	Addr string

	ln   net.Listener
	mu   sync.Mutex
	msgs []Message
	wg   sync.WaitGroup
}

// New starts a server on a free loopback port, closed when the test ends.
func New(tb testing.TB) *Server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), ln: ln}
	s.wg.Add(1)
	go s.serve()
	tb.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// Messages returns the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.session(c)
		}()
	}
}

func (s *Server) session(c net.Conn) {
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	say := func(line string) { w.WriteString(line + "\r\n"); w.Flush() }
	say("220 smtptest ready")
	var m Message
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250 smtptest")
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			m = Message{From: strings.Trim(strings.TrimSpace(line)[10:], "<> ")}
			say("250 ok")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			m.To = append(m.To, strings.Trim(strings.TrimSpace(line)[8:], "<> "))
			say("250 ok")
		case cmd == "DATA":
			say("354 go ahead")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" || l == ".\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			m.Data = b.String()
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
			say("250 accepted")
		case cmd == "RSET", cmd == "NOOP":
			say("250 ok")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("502 not implemented")
		}
	}
}
