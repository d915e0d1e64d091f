package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// wire is a lean HTTP/1.1 client on one kept-alive connection, for the
// load benchmarks: it writes the request bytes it is given and reads a
// response with a Content-Length, at a fraction of net/http's client
// cost, so that the process's CPU goes to the server being measured
// (in a deployment the clients are browsers on other machines). It
// reconnects when the server closes the connection. Chunked bodies are
// read as well.
type wire struct {
	addr string
	// from is the local address to connect from (any when nil).
	from net.IP
	conn net.Conn
	r    *bufio.Reader
	body []byte
}

// wireResponse is what the benchmarks read of a response; Body is valid
// until the next request.
type wireResponse struct {
	Status int
	Gzip   bool
	Body   []byte
}

// do sends req (a complete HTTP/1.1 request) and reads the response.
func (w *wire) do(req []byte) (wireResponse, error) {
	for attempt := 0; ; attempt++ {
		res, err := w.try(req)
		if err == nil || attempt == 1 {
			return res, err
		}
		w.close() // a connection the server closed: once more on a new one
	}
}

func (w *wire) close() {
	if w.conn != nil {
		w.conn.Close()
		w.conn = nil
	}
}

func (w *wire) try(req []byte) (res wireResponse, err error) {
	if w.conn == nil {
		d := net.Dialer{}
		if w.from != nil {
			d.LocalAddr = &net.TCPAddr{IP: w.from}
		}
		if w.conn, err = d.Dial("tcp", w.addr); err != nil {
			return res, err
		}
		if w.r == nil {
			w.r = bufio.NewReaderSize(w.conn, 8<<10)
		} else {
			w.r.Reset(w.conn)
		}
	}
	if _, err := w.conn.Write(req); err != nil {
		return res, err
	}
	line, err := w.r.ReadSlice('\n')
	if err != nil {
		return res, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return res, fmt.Errorf("wire: bad status line %q", line)
	}
	if res.Status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return res, fmt.Errorf("wire: bad status line %q", line)
	}
	n, closing, chunked := -1, false, false
	for {
		line, err := w.r.ReadSlice('\n')
		if err != nil {
			return res, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if n, err = strconv.Atoi(string(value)); err != nil {
				return res, fmt.Errorf("wire: bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Content-Encoding")):
			res.Gzip = bytes.EqualFold(value, []byte("gzip"))
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	switch {
	case chunked:
		if res.Body, err = w.chunks(); err != nil {
			return res, err
		}
	case n < 0:
		w.close()
		return res, errors.New("wire: response without Content-Length")
	default:
		if cap(w.body) < n {
			w.body = make([]byte, n)
		}
		res.Body = w.body[:n]
		if _, err := io.ReadFull(w.r, res.Body); err != nil {
			return res, err
		}
	}
	if closing {
		w.close()
	}
	return res, nil
}

// chunks reads a chunked body (without trailers).
func (w *wire) chunks() ([]byte, error) {
	body := w.body[:0]
	for {
		line, err := w.r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 32)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("wire: bad chunk size %q", line)
		}
		if n == 0 {
			_, err := w.r.ReadSlice('\n') // the empty line after the last chunk
			w.body = body
			return body, err
		}
		at := len(body)
		body = append(body, make([]byte, n)...)
		if _, err := io.ReadFull(w.r, body[at:]); err != nil {
			return nil, err
		}
		if _, err := w.r.Discard(2); err != nil {
			return nil, err
		}
	}
}
