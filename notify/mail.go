package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/mail"
	"net/smtp"
	"time"

	"github.com/changedigest/changedigest"
)

// Mailer sends messages through an SMTP relay.
type Mailer struct {
	// Addr is the relay's host:port.
	Addr string
	// From is the sender of digests.
	From mail.Address
	// Username and Password authenticate with PLAIN when set (only over
	// TLS or to a loopback relay, as net/smtp insists).
	Username, Password string
	// Timeout bounds one delivery; 30 s unless set.
	Timeout time.Duration
}

// NewMailer checks the relay address and sender and returns a mailer.
func NewMailer(addr, from string) (*Mailer, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, changedigest.Errorf(changedigest.EINVALID, "SMTP relay %q is not host:port", addr)
	}
	a, err := mail.ParseAddress(from)
	if err != nil {
		return nil, changedigest.Errorf(changedigest.EINVALID, "sender address %q: %v", from, err)
	}
	return &Mailer{Addr: addr, From: *a, Timeout: 30 * time.Second}, nil
}

// Send delivers msg (a complete RFC 5322 message with CRLF line ends) to to.
func (m *Mailer) Send(ctx context.Context, to string, msg []byte) error {
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return fmt.Errorf("notify: connect to SMTP relay %s: %w", m.Addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	host, _, _ := net.SplitHostPort(m.Addr)
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("notify: SMTP relay %s: %w", m.Addr, err)
	}
	defer c.Close()
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(&tls.Config{ServerName: host}); err != nil {
			return fmt.Errorf("notify: STARTTLS with %s: %w", m.Addr, err)
		}
	}
	if m.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", m.Username, m.Password, host)); err != nil {
			return fmt.Errorf("notify: SMTP login to %s: %w", m.Addr, err)
		}
	}
	if err := c.Mail(m.From.Address); err != nil {
		return fmt.Errorf("notify: SMTP MAIL FROM: %w", err)
	}
	if err := c.Rcpt(to); err != nil {
		return fmt.Errorf("notify: SMTP RCPT TO %s: %w", to, err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("notify: SMTP DATA: %w", err)
	}
	if _, err := w.Write(bytes.TrimRight(msg, "\r\n")); err != nil {
		return fmt.Errorf("notify: write message: %w", err)
	}
	if _, err := w.Write([]byte("\r\n")); err != nil {
		return fmt.Errorf("notify: write message: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("notify: message refused: %w", err)
	}
	return c.Quit()
}
