package expand

import (
	"sync"
	"testing"
)

// TestConcurrent expands and matches from several goroutines at once on a
// fresh WordNet, whose lazy parts (glosses, hyponym counts, exception
// index) are then built concurrently; run with -race.
func TestConcurrent(t *testing.T) {
	wn, err := LoadDir("testdata/dict")
	if err != nil {
		t.Fatal(err)
	}
	e := NewExpander(wn)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			m, err := e.Matcher(profile("cricket", "football", "tennis", "elections", "geese"))
			if err != nil {
				t.Error(err)
				return
			}
			if got := m.Match("Rugby and elections, geese and soccer"); len(got) != 4 {
				t.Errorf("got %d matches, want 4: %v", len(got), got)
			}
		})
	}
	wg.Wait()
}
