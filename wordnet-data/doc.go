// Package wordnetdata holds Princeton WordNet 3.0 in a compact table that is
// embedded in the binary, so that the service never parses the original
// dictionary files at start-up.
//
// The table is built from the dict files (Debian's wordnet-base installs
// them in /usr/share/wordnet) by Build, which parses them with
// github.com/fluhus/gostuff/nlp/wordnet and completes what that parser
// leaves out: the sense order of the index files, the tag counts of
// cntlist.rev and the lexicographer file of each synset. The generator
// program in internal/gen writes the result to wordnet30.cdwn; regenerate
// it with `go generate ./wordnet-data/`.
//
// What the table keeps: every lemma with its senses per part of speech in
// WordNet's sense order and their tag counts; every synset with its words,
// lexicographer file, definition (usage examples are left out) and the
// pointers used to expand and disambiguate terms (hypernyms, hyponyms and
// their instance forms, similar-to, derivation, also-see, verb group,
// topic domains); and the morphological exception lists. It is stored as
// one string table and arrays of integers, in two gzip members: the core
// (lemmas, senses, synsets, pointers, exceptions), decoded on open, and the
// definitions, coded as word numbers and decoded the first time one is
// asked for.
//
// WordNet is Copyright 2006 by Princeton University; see the LICENSE file
// beside this one.
package wordnetdata

import (
	_ "embed"
	"sync"
)

//go:generate go run ./internal/gen -dict /usr/share/wordnet -o wordnet30.cdwn

//go:embed wordnet30.cdwn
var embedded []byte

var (
	embeddedOnce  sync.Once
	embeddedTable *Table
	embeddedErr   error
)

// Embedded returns the table embedded in the binary. It is decoded once;
// later calls return the same *Table. The error is non-nil only if the
// embedded file is corrupt, which is a build defect.
func Embedded() (*Table, error) {
	embeddedOnce.Do(func() {
		embeddedTable, embeddedErr = Decode(embedded)
	})
	return embeddedTable, embeddedErr
}

// EmbeddedSize is the size in bytes of the embedded table file.
func EmbeddedSize() int { return len(embedded) }
