package changedigest

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseNumber(t *testing.T) {
	tests := []struct {
		in       string
		want     float64
		currency string
	}{
		{"1.234,56 €", 1234.56, "EUR"},
		{"€ 1 234,56", 1234.56, "EUR"},
		{"€\u00a01\u00a0234,56", 1234.56, "EUR"},
		{"1\u202f234,56\u00a0€", 1234.56, "EUR"},
		{"$1,234.56", 1234.56, "USD"},
		{"1,234.56 USD", 1234.56, "USD"},
		{"US$ 99.99", 99.99, "USD"},
		{"£24.00", 24, "GBP"},
		{"¥12,800", 12800, "JPY"},
		{"12,800円", 12800, "JPY"},
		{"12.800 ₫", 12800, "VND"},
		{"1.234.567 ₫", 1234567, "VND"},
		{"24.00", 24, ""},
		{"19.5", 19.5, ""},
		{"19,50 €", 19.5, "EUR"},
		{"12,5", 12.5, ""},
		{"1.234", 1234, ""},       // a single group of three: thousands
		{"1,234", 1234, ""},       // the same with a comma
		{"0.500", 0.5, ""},        // a group cannot start after a lone 0
		{"1.2345", 1.2345, ""},    // four digits: decimal
		{"1,5 KWD", 1.5, "KWD"},   // one decimal digit
		{"1.500 KWD", 1.5, "KWD"}, // three-decimal currency
		{"CHF 1'234.50", 1234.5, "CHF"},
		{"1,234,567", 1234567, ""},
		{"1.234.567,89 €", 1234567.89, "EUR"},
		{"12,– €", 12, "EUR"},
		{"Price: 29.00 EUR incl. VAT", 29, "EUR"},
		{"-5,00 €", -5, "EUR"},
		{"42", 42, ""},
		{"24.00 2 items", 24, ""},                 // a space before a short group ends the number
		{"Save 20 % – now 19,99 €", 19.99, "EUR"}, // the number beside the currency
		{"2 for 1 234,00 EUR", 1234, "EUR"},       // the same, after it
		{"1 234 567 ₫", 1234567, "VND"},
		{"Art. 4471 – $ 12.50", 12.5, "USD"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, cur, ok := ParseNumber(tt.in)
			if !ok || got != tt.want || cur != tt.currency {
				t.Errorf("ParseNumber(%q) = %v, %q, %v; want %v, %q", tt.in, got, cur, ok, tt.want, tt.currency)
			}
		})
	}
	for _, in := range []string{"", "out of stock", "€"} {
		if n, _, ok := ParseNumber(in); ok {
			t.Errorf("ParseNumber(%q) = %v, want no number", in, n)
		}
	}
}

func TestParseAvailability(t *testing.T) {
	tests := map[string]string{
		"https://schema.org/InStock":   AvailInStock,
		"http://schema.org/OutOfStock": AvailOutOfStock,
		"InStock":                      AvailInStock,
		"https://schema.org/PreOrder":  AvailOutOfStock,
		"https://schema.org/SoldOut":   AvailOutOfStock,
		"LimitedAvailability":          AvailInStock,
		"In stock":                     AvailInStock,
		"Only 3 left in stock":         AvailInStock,
		"Out of stock":                 AvailOutOfStock,
		"Currently unavailable.":       AvailOutOfStock,
		"Auf Lager":                    AvailInStock,
		"Nicht auf Lager":              AvailOutOfStock,
		"Ausverkauft":                  AvailOutOfStock,
		"Rupture de stock":             AvailOutOfStock,
		"En stock":                     AvailInStock,
		"Agotado":                      AvailOutOfStock,
		"24,00 €":                      "",
		"":                             "",
	}
	for in, want := range tests {
		if got := ParseAvailability(in); got != want {
			t.Errorf("ParseAvailability(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCondition(t *testing.T) {
	good := map[string]string{
		"below 20":           "below 20",
		"  Below   19,99 € ": "below 19.99",
		"above 1,000":        "above 1000",
		"drop 10%":           "drop 10%",
		"rise 2.5 %":         "rise 2.5%",
		"change 5":           "change 5%",
		"in stock":           "in stock",
		"Back in stock":      "in stock",
		"out of stock":       "out of stock",
		"appears Sale":       "appears Sale",
		"":                   "",
	}
	for in, want := range good {
		c, err := ParseCondition(in)
		if err != nil || c.String() != want {
			t.Errorf("ParseCondition(%q) = %q, %v; want %q", in, c.String(), err, want)
		}
	}
	for _, in := range []string{"below", "below cheap", "below 10%", "drop -5%", "drop x", "change 0%", "soon", "appears"} {
		_, err := ParseCondition(in)
		var e *Error
		if !errors.As(err, &e) || e.Code != EINVALID || !strings.Contains(e.Message, "when") {
			t.Errorf("ParseCondition(%q) = %v, want an EINVALID error naming when", in, err)
		}
	}
	w := &Watch{URL: "https://example.org", When: "below twenty"}
	if err := w.Validate(); err == nil || !strings.Contains(err.Error(), `when "below twenty"`) {
		t.Errorf("Validate = %v, want the when field named", err)
	}
}

// series reads texts as the values of successive versions under c and
// says which versions' conditions hold.
func series(c Condition, texts ...string) []bool {
	var prev *Value
	var out []bool
	for _, s := range texts {
		v := &Value{}
		if s == "!" {
			v.Error = "the value selector matched nothing"
		} else {
			v.ReadValueText(s)
		}
		v.Follow(prev, c)
		ok, _ := c.Holds(v)
		out = append(out, ok)
		prev = v
	}
	return out
}

func TestConditionHolds(t *testing.T) {
	tests := []struct {
		when  string
		texts []string
		want  string // one letter a version: y told, n not
	}{
		{"below 20", []string{"24.00", "29.00", "19.50"}, "nny"},
		{"below 20", []string{"19.50", "19.50", "18"}, "yny"},
		{"above 100", []string{"90", "101", "!", "120"}, "nyny"},
		{"drop 10%", []string{"100", "95", "89", "85", "79"}, "nnyny"},
		{"rise 10%", []string{"100", "105", "111"}, "nny"},
		{"change 5%", []string{"100", "94", "97", "99", "94"}, "nynyy"},
		{"in stock", []string{"Out of stock", "In stock", "In stock", "!", "Ausverkauft", "Auf Lager"}, "nynnny"},
		{"out of stock", []string{"In stock", "Rupture de stock", "Rupture de stock", "En stock"}, "nynn"},
		{"appears Sale", []string{"24 €", "Sale 19 €", "Sale 18 €", "18 €", "Sale 17 €"}, "nynny"},
	}
	for _, tt := range tests {
		t.Run(tt.when, func(t *testing.T) {
			c, err := ParseCondition(tt.when)
			if err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for _, ok := range series(c, tt.texts...) {
				if ok {
					got.WriteByte('y')
				} else {
					got.WriteByte('n')
				}
			}
			if got.String() != tt.want {
				t.Errorf("%v: told %s, want %s", tt.texts, got.String(), tt.want)
			}
		})
	}
}

func TestNotableCondition(t *testing.T) {
	w := &Watch{URL: "https://example.org", When: "below 20"}
	c := &Change{Type: ChangeContent, OldText: "29.00", NewText: "19.50"}
	n := 19.5
	if ok, why := Notable(w, &Snapshot{Value: &Value{Text: "19.50", Number: &n}}, c, false); !ok {
		t.Errorf("19.50 below 20 not told: %s", why)
	}
	n2 := 29.0
	if ok, _ := Notable(w, &Snapshot{Value: &Value{Text: "29.00", Number: &n2}}, c, false); ok {
		t.Error("29 below 20 told")
	}
	ok, why := Notable(w, &Snapshot{Value: &Value{Error: `the value selector ".price" matched nothing`}}, c, false)
	if ok || !strings.Contains(why, "matched nothing") {
		t.Errorf("a version without a value: %v, %q", ok, why)
	}
}

// FuzzParseNumber: no text makes ParseNumber panic or return a number
// that is not finite, and a plain integer reads as itself.
func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"1.234,56 €", "$1,234.56", "¥12,800", "12,– €", "-5", "1 234 567 ₫", "0.500 KWD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, _, ok := ParseNumber(s)
		if ok && (math.IsNaN(n) || math.IsInf(n, 0)) {
			t.Errorf("ParseNumber(%q) = %v", s, n)
		}
		ParseAvailability(s)
		if c, err := ParseCondition(s); err == nil {
			if c2, err := ParseCondition(c.String()); err != nil || c2 != c {
				t.Errorf("condition %q reads back as %q, %v", c.String(), c2.String(), err)
			}
		}
	})
}
