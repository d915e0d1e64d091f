package segmenter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/testenv"
)

func TestReadValue(t *testing.T) {
	tests := []struct {
		file, sel string
		number    float64 // 0: none
		avail     string
		currency  string
		err       string // a part of the error, when one is wanted
	}{
		// The first offer of the page's structured data.
		{file: "shopify-product.html", number: 24, avail: changedigest.AvailInStock, currency: "USD"},
		{file: "woocommerce-graph.html", number: 1234.5, avail: changedigest.AvailOutOfStock, currency: "EUR"},
		{file: "aggregate-offer.html", number: 89.9, avail: changedigest.AvailInStock, currency: "EUR"},
		{file: "no-offer.html", err: "no offer"},
		// Selectors on the page's text, as the shop writes it.
		{file: "shopify-product.html", sel: ".price-item--regular", number: 24, currency: "USD"},
		{file: "shopify-product.html", sel: ".product__inventory", avail: changedigest.AvailInStock},
		{file: "woocommerce-graph.html", sel: "p.price", number: 1234.5, currency: "EUR"},
		{file: "woocommerce-graph.html", sel: "p.stock", avail: changedigest.AvailOutOfStock},
		{file: "woocommerce-graph.html", sel: "xpath://p[@class='price']//bdi", number: 1234.5, currency: "EUR"},
		{file: "aggregate-offer.html", sel: ".product-price .current", number: 89.9, currency: "EUR"},
		{file: "aggregate-offer.html", sel: `meta[itemprop="price"]`, number: 89.9},
		{file: "aggregate-offer.html", sel: "//meta[@itemprop='price']/@content", number: 89.9},
		{file: "aggregate-offer.html", sel: "xpath:normalize-space(//div[@class='availability'])", avail: changedigest.AvailInStock},
		{file: "aggregate-offer.html", sel: ".nothing-here", err: `".nothing-here" matched nothing`},
		{file: "no-offer.html", sel: "p", err: `no number or availability in "We sell things."`},
		// JSON paths in a JSON document.
		{file: "api-product.json", sel: "$.product.variants[0].price", number: 24},
		{file: "api-product.json", sel: "$.product.variants[1].inventory", avail: changedigest.AvailOutOfStock},
		{file: "api-product.json", sel: "$.product.list_price", number: 1234.567}, // a JSON number, read exactly
		{file: "api-product.json", sel: "$.product.missing", err: "leads to nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.file+" "+tt.sel, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "value", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			v := ReadValue(body, tt.sel)
			if tt.err != "" {
				if !strings.Contains(v.Error, tt.err) {
					t.Errorf("error %q, want one with %q (value %+v)", v.Error, tt.err, v)
				}
				return
			}
			if v.Error != "" {
				t.Fatalf("error %q", v.Error)
			}
			switch {
			case tt.number == 0 && v.Number != nil:
				t.Errorf("number %v from %q, want none", *v.Number, v.Text)
			case tt.number != 0 && (v.Number == nil || *v.Number != tt.number):
				t.Errorf("number %v from %q, want %v", v.Number, v.Text, tt.number)
			}
			if v.Avail != tt.avail || v.Currency != tt.currency {
				t.Errorf("availability %q, currency %q from %q; want %q, %q", v.Avail, v.Currency, v.Text, tt.avail, tt.currency)
			}
		})
	}
}

// TestReadValueTradePrices reads one price through the corpus's trade
// price history (a JSON document a week): each version's value is the
// number the document holds, read exactly (not as a shop's thousands),
// and a condition on the series tells the weeks it held.
func TestReadValueTradePrices(t *testing.T) {
	dir := testenv.Corpus(t, "versions-json")
	files, _ := filepath.Glob(filepath.Join(dir, "warframe-riven-trade-prices", "[0-9]*.json"))
	if len(files) < 10 {
		t.Fatal("no trade price history")
	}
	sort.Strings(files)
	cond, err := changedigest.ParseCondition("change 10%")
	if err != nil {
		t.Fatal(err)
	}
	var prev *changedigest.Value
	read, told := 0, 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var items []struct {
			ItemType string
			Avg      json.Number
		}
		if err := json.Unmarshal(quoteNonNumbers(body), &items); err != nil || len(items) == 0 {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		want, err := items[0].Avg.Float64()
		if err != nil {
			continue // NaN as Python writes it
		}
		v := ReadValue(body, "$[0].avg")
		if v.Error != "" || v.Number == nil || *v.Number != want {
			t.Fatalf("%s: value %+v, want %v", filepath.Base(f), v, want)
		}
		v.Follow(prev, cond)
		if ok, _ := cond.Holds(v); ok {
			told++
		}
		read++
		prev = v
	}
	if read < 10 || told == 0 || told >= read {
		t.Errorf("%d versions read, %d told under change 10%%: want some told, not all", read, told)
	}
	t.Logf("%d versions read, %d told under change 10%%", read, told)
}

func TestCheckValueSelector(t *testing.T) {
	for _, sel := range []string{"", ".price", "xpath://span[@id='p']/text()", "/html/body", "$.offers[0].price", "xpath:normalize-space(//p)"} {
		if err := CheckValueSelector(sel); err != nil {
			t.Errorf("CheckValueSelector(%q) = %v", sel, err)
		}
	}
	for _, sel := range []string{"div[", "xpath://p[", "$..price", "jq:.price"} {
		err := CheckValueSelector(sel)
		if err == nil || !strings.Contains(changedigest.ErrorMessage(err), "value selector") {
			t.Errorf("CheckValueSelector(%q) = %v, want an error naming the value selector", sel, err)
		}
	}
}
