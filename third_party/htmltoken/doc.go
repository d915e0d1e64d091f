// Package htmltoken is the HTML tokenizer of golang.org/x/net/html for
// input held in memory: the same tokens, read about twice as fast and
// without an allocation per attribute (see README.md).
package htmltoken
