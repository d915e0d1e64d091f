// Command gen builds the embedded WordNet table from the WordNet 3.0 dict
// files:
//
//	go run ./wordnet-data/internal/gen -dict /usr/share/wordnet -o wordnet-data/wordnet30.cdwn
//
// It is run by `go generate ./wordnet-data/`.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	wordnetdata "github.com/changedigest/changedigest/wordnet-data"
)

func main() {
	dict := flag.String("dict", "/usr/share/wordnet", "directory of the WordNet 3.0 dict files")
	out := flag.String("o", "wordnet30.cdwn", "table file to write")
	flag.Parse()
	if err := run(*dict, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dict, out string) error {
	d, err := wordnetdata.Build(dict)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := d.Encode(&buf, true); err != nil {
		return err
	}
	// Write beside, then rename, so a failed run leaves the old table.
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	t, err := wordnetdata.Decode(buf.Bytes())
	if err != nil {
		return err
	}
	s := t.Stats()
	fmt.Fprintf(os.Stderr, "gen: wrote %s: %d bytes; %d lemmas, %d synsets, %d senses, %d words, %d pointers, %d exceptions\n",
		out, buf.Len(), s.Lemmas, s.Synsets, s.Senses, s.Words, s.Pointers, s.Exceptions)
	return nil
}
