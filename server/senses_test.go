package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/expand"
)

// TestProfileSenseForms checks the profile page's meanings: every sense
// of an interest with its gloss, the chosen one marked, a form per other
// sense that chooses it in one click, the choice kept when the FOAF
// document is uploaded again, and a way back to the automatic choice.
func TestProfileSenseForms(t *testing.T) {
	sc := mustScene(t)
	c := sc.c
	chosen := func() string {
		t.Helper()
		p, _, err := sc.e.store.Profile(context.Background(), sc.u.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p.ChosenSense("jazz")
	}
	resp, _ := c.post("/profile/terms", url.Values{"term": {"jazz"}})
	body := c.follow(resp)
	mustContain(t, body, "“a genre of popular music that originated in New Orleans",
		"the sense people usually mean by jazz as an interest", "Meant something else? 5 meanings",
		"empty rhetoric or insincere or exaggerated talk", `<input type="hidden" name="sense" value="n07136711">`,
		`<li class="sense-chosen"><span class="sense-gloss">a genre of popular music`)

	resp, _ = c.post("/profile/senses", url.Values{"term": {"jazz"}, "sense": {"n07060976"}})
	body = c.follow(resp)
	mustContain(t, body, "The meaning of jazz is set", "“a style of dance music popular in the 1920s", "sense chosen by you",
		"Choose automatically again")
	if got := chosen(); got != "n07060976" {
		t.Fatalf("stored choice %q", got)
	}

	doc := `@prefix foaf: <http://xmlns.com/foaf/0.1/> .
<#me> a foaf:Person ; foaf:name "Ann" ; foaf:interest [ foaf:name "jazz" ], [ foaf:name "chess" ] .`
	resp, _ = c.postFile("/profile/foaf", url.Values{"foaf_text": {doc}}, "", "", nil)
	body = c.follow(resp)
	mustContain(t, body, "Profile updated", "“a style of dance music popular in the 1920s", "sense chosen by you")
	if got := chosen(); got != "n07060976" {
		t.Errorf("after the upload the choice is %q", got)
	}

	resp, body = c.post("/profile/senses", url.Values{"term": {"jazz"}, "sense": {"n02084071"}})
	mustStatus(t, "a sense of another word", resp, body, http.StatusBadRequest)
	mustContain(t, body, "n02084071 is not one of the meanings WordNet has for &#34;jazz&#34;")
	resp, body = c.post("/profile/senses", url.Values{"term": {"golf"}, "sense": {"n00464894"}})
	mustStatus(t, "not an interest", resp, body, http.StatusBadRequest)
	if got := chosen(); got != "n07060976" {
		t.Errorf("after refused choices the choice is %q", got)
	}

	resp, _ = c.post("/profile/senses", url.Values{"term": {"jazz"}, "sense": {""}})
	body = c.follow(resp)
	mustContain(t, body, "chosen automatically again", "“a genre of popular music")
	if got := chosen(); got != "" {
		t.Errorf("after the reset the choice is %q", got)
	}
}

func TestAPIChooseSense(t *testing.T) {
	e := mustServer(t)
	ann := e.mustUser("ann", "correct horse")
	c := e.api(ann)
	c.call("POST", "/profile/terms", map[string]string{"term": "chess"}, http.StatusOK, nil)
	var p apiProfile
	c.call("GET", "/profile", nil, http.StatusOK, &p)
	x := findExpansion(t, p, "chess")
	if x.Sense == nil || x.Sense.ID != "n00503237" || x.ChosenBy != expand.ChosenByPrior || len(x.Options) != 2 {
		t.Fatalf("chess: %+v", x)
	}
	p = apiProfile{} // decoding into the old value would keep its omitted fields
	c.call("POST", "/profile/senses", map[string]string{"term": "Chess", "sense": "n12111238"}, http.StatusOK, &p)
	x = findExpansion(t, p, "chess")
	if x.Sense == nil || x.Sense.ID != "n12111238" || x.ChosenBy != expand.ChosenByUser ||
		len(p.Profile.Senses) != 1 || p.Profile.Senses[0] != (changedigest.SenseChoice{Term: "Chess", Synset: "n12111238"}) {
		t.Errorf("after choosing the grass: %+v, senses %+v", x, p.Profile.Senses)
	}
	for _, o := range x.Options {
		if o.Chosen != (o.ID == "n12111238") || o.Gloss == "" {
			t.Errorf("option %+v", o)
		}
	}
	c.callErr("POST", "/profile/senses", "application/json", []byte(`{"term":"chess","sense":"n07062697"}`), 400, "invalid", "not one of the meanings")
	c.callErr("POST", "/profile/senses", "application/json", []byte(`{"term":"chess"}`), 400, "invalid", "sense")
	c.callErr("POST", "/profile/senses", "application/json", []byte(`{"term":"chess","sense":"grass"}`), 400, "invalid", "not a WordNet sense")
	p = apiProfile{}
	c.call("POST", "/profile/senses", map[string]string{"term": "chess", "sense": ""}, http.StatusOK, &p)
	if x := findExpansion(t, p, "chess"); x.Sense.ID != "n00503237" || len(p.Profile.Senses) != 0 {
		t.Errorf("after the reset: %+v, senses %+v", x.Sense, p.Profile.Senses)
	}
}

func findExpansion(t *testing.T, p apiProfile, term string) expand.Expansion {
	t.Helper()
	for _, x := range p.Expansions {
		if strings.EqualFold(x.Interest.Term, term) {
			return x
		}
	}
	t.Fatalf("no expansion of %q in %+v", term, p.Expansions)
	return expand.Expansion{}
}
