//go:build ignore

// Command gen_glossfreq builds glossfreq.txt.gz, the background word
// frequencies KeyTerms weighs page words against: for each word, the
// number of WordNet 3.0 synset glosses (definition and examples) it
// occurs in, from the data.noun, data.verb, data.adj and data.adv files
// of the WordNet dictionary. Words found in one gloss only are left out;
// KeyTerms treats missing words as occurring once.
//
// Run it with `go generate ./profile` (Debian: apt-get install wordnet-base)
// or: go run gen_glossfreq.go -dict /usr/share/wordnet -o glossfreq.txt.gz
//
// WordNet 3.0 Copyright 2006 by Princeton University; see WORDNET-LICENSE.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
)

func main() {
	dict := flag.String("dict", "/usr/share/wordnet", "directory of the WordNet 3.0 dict files")
	out := flag.String("o", "glossfreq.txt.gz", "output file")
	flag.Parse()

	df := map[string]int{}
	docs := 0
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		f, err := os.Open(filepath.Join(*dict, "data."+pos))
		if err != nil {
			log.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "  ") { // the licence header
				continue
			}
			i := strings.Index(line, " | ")
			if i < 0 {
				continue
			}
			docs++
			seen := map[string]bool{}
			for _, w := range words(line[i+3:]) {
				if !seen[w] {
					seen[w] = true
					df[w]++
				}
			}
		}
		if err := sc.Err(); err != nil {
			log.Fatal(err)
		}
		f.Close()
	}
	keys := make([]string, 0, len(df))
	for w, n := range df {
		if n >= 2 {
			keys = append(keys, w)
		}
	}
	sort.Strings(keys)

	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	w := bufio.NewWriter(zw)
	fmt.Fprintf(w, "# Document frequencies of words in the %d synset glosses of WordNet 3.0\n", docs)
	fmt.Fprintf(w, "# (WordNet 3.0 Copyright 2006 by Princeton University; see WORDNET-LICENSE).\n")
	fmt.Fprintf(w, "glosses\t%d\n", docs)
	for _, k := range keys {
		fmt.Fprintf(w, "%s\t%d\n", k, df[k])
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d glosses, %d words (%d in two or more glosses)", docs, len(df), len(keys))
}

// words splits text as profile's tokenizer does: lower-case runs of
// letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}
