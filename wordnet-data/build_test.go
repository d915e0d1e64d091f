package wordnetdata

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// removed marks a file miniDict leaves out.
const removed = "\x00removed"

// miniDict writes a dict of two noun synsets and a verb, with files
// replaced by edit (or left out, for removed).
func miniDict(t *testing.T, edit map[string]string) string {
	dir := t.TempDir()
	files := map[string]string{
		"data.noun": "  1 This software and database is being provided to you, the LICENSEE, by  \n" +
			"00000100 06 n 02 car 0 Auto_Mobile 0 001 @ 00000200 n 0000 | a motor vehicle; \"he needs a car\"  \n" +
			"00000200 06 n 01 motor_vehicle 0 001 ~ 00000100 n 0000 | a self-propelled vehicle  \n",
		"data.verb":   "00000300 38 v 01 run 0 000 01 + 02 00 | move fast  \n",
		"data.adj":    "",
		"data.adv":    "",
		"index.noun":  "auto_mobile n 1 0 1 0 00000100  \ncar n 1 1 @ 1 1 00000100  \nmotor_vehicle n 1 1 ~ 1 0 00000200  \n",
		"index.verb":  "run v 1 0 1 1 00000300  \n",
		"index.adj":   "",
		"index.adv":   "",
		"noun.exc":    "cars car\n",
		"verb.exc":    "ran run\n",
		"adj.exc":     "",
		"adv.exc":     "",
		"cntlist.rev": "car%1:06:00:: 1 71\nrun%2:38:00:: 1 5\nnothing%1:06:00:: 1 3\n",
	}
	for name, c := range edit {
		files[name] = c
	}
	for name, c := range files {
		if c == removed {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestBuild(t *testing.T) {
	d, err := Build(miniDict(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.Lemmas, "|"); got != "auto mobile|car|motor vehicle|run" {
		t.Errorf("lemmas %s", got)
	}
	car := d.Synsets[0]
	if car.Gloss != "a motor vehicle" || car.LexFile != 6 || car.Words[1].Display != "Auto Mobile" {
		t.Errorf("car synset %+v", car)
	}
	if len(car.Pointers) != 1 || car.Pointers[0] != (Pointer{Rel: Hypernym, Target: 1}) {
		t.Errorf("car pointers %+v", car.Pointers)
	}
	if s := d.Senses[1]; len(s) != 1 || s[0].TagCount != 71 {
		t.Errorf("car senses %+v, want one tagged 71 times", s)
	}
	if s := d.Senses[3]; len(s) != 1 || s[0].TagCount != 5 || d.Synsets[s[0].Synset].POS != Verb {
		t.Errorf("run senses %+v", s)
	}
	if ex := d.Exceptions[1]; len(ex) != 1 || ex[0] != (Exception{"ran", "run"}) {
		t.Errorf("verb exceptions %+v", ex)
	}
	// Without cntlist.rev there are no tag counts, and no error.
	d, err = Build(miniDict(t, map[string]string{"cntlist.rev": removed}))
	if err != nil || d.Senses[1][0].TagCount != 0 {
		t.Errorf("without cntlist.rev: %v, %+v", err, d)
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name string
		edit map[string]string
		msg  string
	}{
		{"missing data file", map[string]string{"data.noun": removed}, "data.noun"},
		{"missing index file", map[string]string{"index.verb": removed}, "index.verb"},
		{"pointer to a missing synset", map[string]string{"data.noun": "00000100 06 n 01 car 0 001 @ 00000999 n 0000 | a car  \n"}, "missing synset"},
		{"sense of a missing synset", map[string]string{"index.noun": "auto_mobile n 1 0 1 0 00000100  \ncar n 2 0 2 0 00000100 00000999  \nmotor_vehicle n 1 0 1 0 00000200  \n"}, "missing synset"},
		{"word in no index", map[string]string{"index.noun": "car n 1 0 1 0 00000100  \n"}, "in no index file"},
		{"bad index counts", map[string]string{"index.noun": "car n 2 0 2 0 00000100  \n"}, "index.noun"},
		{"bad cntlist line", map[string]string{"cntlist.rev": "car%1:06:00:: 1\n"}, "cntlist.rev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(miniDict(t, tt.edit))
			if !errors.Is(err, ErrDict) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("Build = %v, want ErrDict mentioning %q", err, tt.msg)
			}
		})
	}
}
