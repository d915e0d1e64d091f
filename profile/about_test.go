package profile

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/changedigest/changedigest"
)

const interestsTurtle = `@prefix foaf: <http://xmlns.com/foaf/0.1/> .
<#me> a foaf:Person ; foaf:name "Ada" ;
  foaf:interest <http://en.wikipedia.org/wiki/Jazz>, <http://dbpedia.org/resource/Chess>,
    <http://example.org/broken>, <urn:isbn:0451450523> ;
  foaf:topic_interest "cooking" .
`

// TestBuildReadsInterestPages checks that Build reads the pages interests
// name through Describe, keeps what they say in About, does not read a
// page twice while it is cached, and goes on past a page that fails.
func TestBuildReadsInterestPages(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var asked []string
	b := NewBuilder()
	b.Now = func() time.Time { return now }
	b.Describe = func(ctx context.Context, url string) (changedigest.About, error) {
		asked = append(asked, url)
		if strings.Contains(url, "broken") {
			return changedigest.About{}, errors.New("404")
		}
		name := url[strings.LastIndexByte(url, '/')+1:]
		return changedigest.About{Title: name + " – Wikipedia", Text: "  " + name + " is\n a thing " + strings.Repeat("word ", 1000)}, nil
	}
	build := func() *changedigest.Profile {
		t.Helper()
		p, _, err := b.Build(context.Background(), Document{Body: strings.NewReader(interestsTurtle), Name: "http://example.org/foaf.ttl"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := build()
	if len(asked) != 3 {
		t.Errorf("asked for %v, want the three web pages", asked)
	}
	got := map[string]*changedigest.About{}
	for _, in := range p.Interests {
		got[in.Term] = in.About
	}
	if a := got["jazz"]; a == nil || a.Title != "Jazz – Wikipedia" || a.URL != "http://en.wikipedia.org/wiki/Jazz" ||
		!strings.HasPrefix(a.Text, "Jazz is a thing word") || len(a.Text) > changedigest.MaxAboutText {
		t.Errorf("jazz's About = %+v", a)
	}
	if got["broken"] != nil || got["cooking"] != nil {
		t.Errorf("About of a failed page or a literal: %+v, %+v", got["broken"], got["cooking"])
	}
	asked = nil
	build()
	if len(asked) != 1 || !strings.Contains(asked[0], "broken") {
		t.Errorf("the second build asked for %v, want only the page that failed", asked)
	}
	now = now.Add(DefaultAboutCacheTTL + time.Hour)
	asked = nil
	build()
	if len(asked) != 3 {
		t.Errorf("after the cache expired, asked for %v", asked)
	}
	b.MaxInterestPages, b.AboutCacheSize = 1, 1
	now = now.Add(DefaultAboutCacheTTL + time.Hour)
	asked = nil
	build()
	if len(asked) != 1 {
		t.Errorf("with MaxInterestPages 1, asked for %v", asked)
	}
}

func TestDescribeRDF(t *testing.T) {
	doc := `@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix dbo: <http://dbpedia.org/ontology/> .
<http://dbpedia.org/resource/Jazz> rdfs:label "Jazz"@en, "Jazz"@fr ;
  dbo:abstract "Le jazz est un genre musical."@fr, "Jazz is a music genre that originated in New Orleans."@en .`
	a, ok := DescribeRDF([]byte(doc), "text/turtle", "http://dbpedia.org/resource/Jazz")
	if !ok || a.Title != "Jazz" || a.Text != "Jazz is a music genre that originated in New Orleans." {
		t.Errorf("DescribeRDF = %+v, %v", a, ok)
	}
	if _, ok := DescribeRDF([]byte(doc), "text/turtle", "http://dbpedia.org/resource/Chess"); ok {
		t.Error("a resource the document does not describe gave an About")
	}
	if _, ok := DescribeRDF([]byte("<html><title>x</title></html>"), "text/html", "http://example.org/"); ok {
		t.Error("an HTML page gave an About")
	}
}

// TestSensesSurviveRebuild checks ChooseSense and that Merge keeps the
// choices and the interest pages read before.
func TestSensesSurviveRebuild(t *testing.T) {
	old := &changedigest.Profile{UserID: 7, Interests: []changedigest.Interest{
		{Term: "jazz", URI: "http://en.wikipedia.org/wiki/Jazz", Source: "foaf:interest", Weight: 1,
			About: &changedigest.About{URL: "http://en.wikipedia.org/wiki/Jazz", Title: "Jazz – Wikipedia"}},
		{Term: "chess", Source: "foaf:interest", Weight: 1},
	}}
	if err := ChooseSense(old, "Jazz", "n07060976"); err != nil {
		t.Fatal(err)
	}
	if err := ChooseSense(old, "chess", "n00503237"); err != nil {
		t.Fatal(err)
	}
	if err := ChooseSense(old, "jazz", "n07062697"); err != nil {
		t.Fatal(err)
	}
	if got := old.ChosenSense("JAZZ"); got != "n07062697" || len(old.Senses) != 2 {
		t.Fatalf("senses = %+v", old.Senses)
	}
	for _, bad := range []struct{ term, synset string }{{"golf", "n00464894"}, {"jazz", "07062697"}, {"jazz", "x07062697"}, {"", "n00464894"}} {
		err := ChooseSense(old, bad.term, bad.synset)
		if changedigest.ErrorCode(err) != changedigest.EINVALID {
			t.Errorf("ChooseSense(%q, %q) = %v, want EINVALID", bad.term, bad.synset, err)
		}
	}
	fresh := &changedigest.Profile{Interests: []changedigest.Interest{
		{Term: "jazz", URI: "http://en.wikipedia.org/wiki/Jazz", Source: "foaf:interest", Weight: 1},
		{Term: "chess", Source: "foaf:interest", Weight: 1},
	}}
	p := Merge(old, fresh)
	if p.ChosenSense("jazz") != "n07062697" || p.ChosenSense("chess") != "n00503237" {
		t.Errorf("senses after the rebuild = %+v", p.Senses)
	}
	if a := p.Interests[0].About; a == nil || a.Title != "Jazz – Wikipedia" {
		t.Errorf("jazz's About after the rebuild = %+v", a)
	}
	if err := ChooseSense(p, "chess", ""); err != nil || p.ChosenSense("chess") != "" {
		t.Errorf("clearing: %v, senses %+v", err, p.Senses)
	}
}
