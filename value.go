package changedigest

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Value is what a watch's value (its ValueSelector, or a page's offer in
// its structured data) read from one stored version: a number such as a
// price, an availability, or why nothing could be read. The crawler reads
// it when it stores the version and keeps, beside it, what the versions
// before held, so that a condition is weighed from the version alone.
type Value struct {
	// Text is what was read, clipped (the element's text, the offer's
	// price and availability).
	Text string `json:"text,omitempty"`
	// Number is the number read from Text (a price: "1.234,56 €" is
	// 1234.56); nil when Text holds none.
	Number *float64 `json:"number,omitempty"`
	// Currency is the currency written beside the number ("EUR", "$"), if any.
	Currency string `json:"currency,omitempty"`
	// Avail is the availability read, AvailInStock or AvailOutOfStock;
	// empty when Text tells none.
	Avail string `json:"avail,omitempty"`
	// Error says why no value could be read ("the value selector
	// ".price" matched nothing"); the other fields are then empty.
	Error string `json:"error,omitempty"`

	// PrevNumber and PrevAvail are the last number and availability read
	// from an earlier version (versions that had none are skipped).
	PrevNumber *float64 `json:"prev_number,omitempty"`
	PrevAvail  string   `json:"prev_avail,omitempty"`
	// PrevText is the text of the last earlier version a value was read from.
	PrevText string `json:"prev_text,omitempty"`
	// Base is the number of the last earlier version whose condition
	// held (or, before any did, the first number read): what a change in
	// percent is measured from.
	Base *float64 `json:"base,omitempty"`
}

// Availabilities.
const (
	AvailInStock    = "in stock"
	AvailOutOfStock = "out of stock"
)

// MaxValueText bounds Value.Text.
const MaxValueText = 200

// ReadValueText fills v's Number, Currency and Avail from text, which it
// keeps (clipped) as v.Text.
func (v *Value) ReadValueText(text string) {
	text = strings.Join(strings.Fields(text), " ")
	v.Text = clipRunes(text, MaxValueText)
	if n, cur, ok := ParseNumber(text); ok {
		v.Number, v.Currency = &n, cur
	}
	v.Avail = ParseAvailability(text)
}

// String writes v for people: "19.5 EUR, in stock", or "not read: "
// and why.
func (v *Value) String() string {
	if v.Error != "" {
		return "not read: " + v.Error
	}
	var parts []string
	if v.Number != nil {
		n := fmtNum(*v.Number)
		if v.Currency != "" {
			n += " " + v.Currency
		}
		parts = append(parts, n)
	}
	if v.Avail != "" {
		parts = append(parts, v.Avail)
	}
	return strings.Join(parts, ", ")
}

// Follow records on v what prev, the value of the version before, and
// the versions before it held: the last number and availability read,
// and the base a change in percent is measured from under condition c.
// prev may be nil (the first version, or one stored before the watch
// read a value).
func (v *Value) Follow(prev *Value, c Condition) {
	if prev == nil {
		return
	}
	v.PrevNumber, v.PrevAvail, v.PrevText = prev.PrevNumber, prev.PrevAvail, prev.PrevText
	if prev.Error == "" {
		v.PrevText = prev.Text
	}
	if prev.Number != nil {
		v.PrevNumber = prev.Number
	}
	if prev.Avail != "" {
		v.PrevAvail = prev.Avail
	}
	v.Base = prev.Base
	if prev.Number != nil {
		if held, _ := c.Holds(prev); held || v.Base == nil {
			v.Base = prev.Number
		}
	}
}

// Condition is when a watch with a value tells a version: its value is
// below or above a number, it dropped, rose or changed by a share since
// the last version whose condition held, the page is back in stock or
// out of it, or a text appears in or disappears from the value. The zero
// Condition tells every version.
type Condition struct {
	Op CondOp
	// X is the number of below and above, the percentage of drop, rise
	// and change.
	X float64
	// Text is the text of appears and disappears.
	Text string
}

// CondOp is a condition's kind.
type CondOp string

// Condition kinds.
const (
	CondBelow      CondOp = "below"
	CondAbove      CondOp = "above"
	CondDrop       CondOp = "drop"
	CondRise       CondOp = "rise"
	CondChange     CondOp = "change"
	CondInStock    CondOp = "in stock"
	CondOutOfStock CondOp = "out of stock"
	CondAppears    CondOp = "appears"
	CondDisappears CondOp = "disappears"
)

// ParseCondition reads a condition as a watch's When is written:
//
//	below 20        the value is below 20
//	above 100       the value is above 100
//	drop 10%        the value fell by 10 % or more since the last told version
//	rise 10%        it rose by 10 % or more
//	change 5%       it moved by 5 % or more, up or down
//	in stock        the page is back in stock (it was out of stock)
//	out of stock    the page went out of stock
//	appears TEXT    TEXT appears in the value's text
//	disappears TEXT TEXT disappears from it
//
// Numbers are read as prices are ("below 19,99 €"). Errors: EINVALID,
// naming the field ("when").
func ParseCondition(s string) (Condition, error) {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return Condition{}, nil
	}
	low := strings.ToLower(s)
	bad := func(format string, args ...any) (Condition, error) {
		return Condition{}, Errorf(EINVALID, "when %q: "+format, append([]any{s}, args...)...)
	}
	switch low {
	case "in stock", "back in stock", "instock":
		return Condition{Op: CondInStock}, nil
	case "out of stock", "outofstock", "sold out":
		return Condition{Op: CondOutOfStock}, nil
	}
	word, rest, _ := strings.Cut(s, " ")
	op := CondOp(strings.ToLower(word))
	switch op {
	case CondAppears, CondDisappears:
		if rest == "" {
			return bad("%s needs a text (%s TEXT)", op, op)
		}
		if len(rest) > 512 {
			return bad("the text is longer than 512 characters")
		}
		return Condition{Op: op, Text: rest}, nil
	case CondBelow, CondAbove:
		n, _, ok := ParseNumber(rest)
		if !ok || strings.ContainsRune(rest, '%') {
			return bad("%s needs a number (%s 20)", op, op)
		}
		return Condition{Op: op, X: n}, nil
	case CondDrop, CondRise, CondChange:
		p := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "%"))
		x, err := strconv.ParseFloat(strings.Replace(p, ",", ".", 1), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return bad("%s needs a percentage (%s 10%%)", op, op)
		}
		if x <= 0 || x > 1000 {
			return bad("the percentage %g is not above 0 and at most 1000", x)
		}
		return Condition{Op: op, X: x}, nil
	}
	return bad("not a condition (below X, above X, drop P%%, rise P%%, change P%%, in stock, out of stock, appears TEXT, disappears TEXT)")
}

// String writes c as ParseCondition reads it.
func (c Condition) String() string {
	switch c.Op {
	case "":
		return ""
	case CondBelow, CondAbove:
		return fmt.Sprintf("%s %s", c.Op, strconv.FormatFloat(c.X, 'f', -1, 64))
	case CondDrop, CondRise, CondChange:
		return fmt.Sprintf("%s %s%%", c.Op, strconv.FormatFloat(c.X, 'f', -1, 64))
	case CondAppears, CondDisappears:
		return string(c.Op) + " " + c.Text
	}
	return string(c.Op)
}

// NeedsNumber reports whether c weighs a number (rather than an
// availability or a text).
func (c Condition) NeedsNumber() bool {
	switch c.Op {
	case CondBelow, CondAbove, CondDrop, CondRise, CondChange:
		return true
	}
	return false
}

// Holds reports whether the version whose value is v is told under c;
// when not, why says so ("29 is not below 20", "no value: the value
// selector ".price" matched nothing"). v nil is a version from which no
// value was read.
func (c Condition) Holds(v *Value) (ok bool, why string) {
	if c.Op == "" {
		return true, ""
	}
	if v == nil {
		return false, "no value was read from this version"
	}
	if v.Error != "" {
		return false, "no value: " + v.Error
	}
	num := func() (float64, bool) {
		if v.Number == nil {
			return 0, false
		}
		return *v.Number, true
	}
	if c.NeedsNumber() {
		if _, ok := num(); !ok {
			return false, fmt.Sprintf("no number in the value %q", v.Text)
		}
	}
	n, _ := num()
	same := v.PrevNumber != nil && *v.PrevNumber == n
	switch c.Op {
	case CondBelow:
		if n >= c.X {
			return false, fmt.Sprintf("%s is not below %s", fmtNum(n), fmtNum(c.X))
		}
		if same {
			return false, fmt.Sprintf("%s is below %s, as it was", fmtNum(n), fmtNum(c.X))
		}
		return true, ""
	case CondAbove:
		if n <= c.X {
			return false, fmt.Sprintf("%s is not above %s", fmtNum(n), fmtNum(c.X))
		}
		if same {
			return false, fmt.Sprintf("%s is above %s, as it was", fmtNum(n), fmtNum(c.X))
		}
		return true, ""
	case CondDrop, CondRise, CondChange:
		base := v.Base
		if base == nil {
			base = v.PrevNumber
		}
		if base == nil || *base == 0 {
			return false, "no earlier value to compare with"
		}
		pct := (n - *base) / math.Abs(*base) * 100
		moved := c.Op == CondDrop && -pct >= c.X || c.Op == CondRise && pct >= c.X ||
			c.Op == CondChange && math.Abs(pct) >= c.X
		if !moved {
			return false, fmt.Sprintf("%s is %+.1f%% from %s, not a %s of %s%%", fmtNum(n), pct, fmtNum(*base), c.Op, fmtNum(c.X))
		}
		return true, ""
	case CondInStock, CondOutOfStock:
		want := AvailInStock
		if c.Op == CondOutOfStock {
			want = AvailOutOfStock
		}
		if v.Avail == "" {
			return false, fmt.Sprintf("no availability in the value %q", v.Text)
		}
		if v.Avail != want {
			return false, "the page is " + v.Avail
		}
		if v.PrevAvail == want {
			return false, "the page was already " + want
		}
		return true, ""
	case CondAppears, CondDisappears:
		has := containsFold(v.Text, c.Text)
		had := containsFold(v.PrevText, c.Text)
		switch {
		case c.Op == CondAppears && !has:
			return false, fmt.Sprintf("%q is not in the value", c.Text)
		case c.Op == CondAppears && had:
			return false, fmt.Sprintf("%q was already in the value", c.Text)
		case c.Op == CondDisappears && has:
			return false, fmt.Sprintf("%q is still in the value", c.Text)
		case c.Op == CondDisappears && !had:
			return false, fmt.Sprintf("%q was not in the value before", c.Text)
		}
		return true, ""
	}
	return false, "unknown condition " + string(c.Op)
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func fmtNum(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// numberRun finds a number in a text: digits, with dots and commas
// between them, and spaces or apostrophes before groups of three.
var numberRun = regexp.MustCompile(`[-−]?\d+(?:[.,]\d+|[ '’\x{00a0}\x{202f}\x{2009}]\d{3}\b)*`)

// currencyCode finds an ISO currency code.
var currencyCode = regexp.MustCompile(`\b(EUR|USD|GBP|JPY|CHF|CAD|AUD|CNY|SEK|NOK|DKK|PLN|CZK|HUF|VND|KRW|INR|BRL|MXN|RUB|TRY|ZAR|NZD|SGD|HKD|KWD|BHD|OMR|JOD|TND)\b`)

// currencySymbols are the currency signs read beside a number, and the
// code each stands for.
var currencySymbols = []struct{ sign, code string }{
	{"US$", "USD"}, {"€", "EUR"}, {"£", "GBP"}, {"¥", "JPY"}, {"円", "JPY"}, {"₫", "VND"},
	{"₩", "KRW"}, {"₹", "INR"}, {"zł", "PLN"}, {"Kč", "CZK"}, {"R$", "BRL"}, {"$", "USD"},
}

// threeDecimals are the currencies written with three decimals, in which
// "1.500" is one and a half.
var threeDecimals = map[string]bool{"KWD": true, "BHD": true, "OMR": true, "JOD": true, "TND": true}

// ParseNumber reads a number of a text as shops write prices, with the
// currency written in it ("EUR", or the code of a sign: "€" is EUR, "$"
// USD, "¥" JPY); ok is false when the text has no number. The number is
// the first one written beside the currency, or the first one when none
// is ("Save 20 % – now 19,99 €" is 19.99).
//
// Spaces (also no-break and thin ones) and apostrophes between digits
// group thousands ("1 234,56", "1'234.50"). Of dots and commas:
//
//   - when both appear, the last one is the decimal separator and the
//     other groups thousands ("1.234,56" and "1,234.56" are 1234.56);
//   - when one appears more than once, it groups thousands ("1.234.567");
//   - when one appears once, it is decimal unless exactly three digits
//     follow it and a nonzero digit precedes the group: "12,5", "12.50",
//     "0.500" and "1.2345" are decimal, "1.234" and "12,800" are 1234 and
//     12800. Currencies written with three decimals (KWD, BHD, OMR, JOD,
//     TND) read "1.500" as 1.5.
//
// A trailing ",-" or ".–" ("12,– €") means no cents.
func ParseNumber(text string) (n float64, currency string, ok bool) {
	runs := numberRun.FindAllStringIndex(text, 20)
	if runs == nil {
		return 0, "", false
	}
	currency = findCurrency(text)
	loc := runs[0]
	if len(runs) > 1 && currency != "" {
		// The number written beside a currency ("Save 20 % – now 19,99 €").
		for _, r := range runs {
			if besideCurrency(text, r[0], r[1]) {
				loc = r
				break
			}
		}
	}
	raw := text[loc[0]:loc[1]]
	neg := false
	if strings.HasPrefix(raw, "-") || strings.HasPrefix(raw, "−") {
		neg = true
		raw = strings.TrimLeft(raw, "-−")
	}
	// Only the digits and the dots and commas matter.
	var b strings.Builder
	for _, r := range raw {
		switch {
		case r >= '0' && r <= '9', r == '.', r == ',':
			b.WriteRune(r)
		case unicode.IsSpace(r), r == '\'', r == '’', r == '\u202f', r == '\u00a0', r == '\u2009':
			// thousands grouping
		}
	}
	s := b.String()
	dots, commas := strings.Count(s, "."), strings.Count(s, ",")
	dec := byte(0) // the decimal separator, if any
	switch {
	case dots > 0 && commas > 0:
		dec = s[strings.LastIndexAny(s, ".,")]
	case dots+commas == 1:
		i := strings.IndexAny(s, ".,")
		after, before := len(s)-i-1, s[:i]
		if after != 3 || before == "0" || before == "" || threeDecimals[currency] {
			dec = s[i]
		}
	}
	var clean strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == dec:
			clean.WriteByte('.')
		case c == '.' || c == ',':
		default:
			clean.WriteByte(c)
		}
	}
	n, err := strconv.ParseFloat(clean.String(), 64)
	if err != nil {
		return 0, "", false
	}
	if neg {
		n = -n
	}
	return n, currency, true
}

// besideCurrency reports whether a currency sign or code is written
// right before text[start:] or right after text[:end], spaces aside.
func besideCurrency(text string, start, end int) bool {
	before := strings.TrimRight(text[:start], " \u00a0\u202f\u2009")
	after := strings.TrimLeft(text[end:], " \u00a0\u202f\u2009")
	for _, c := range currencySymbols {
		if strings.HasSuffix(before, c.sign) || strings.HasPrefix(after, c.sign) {
			return true
		}
	}
	if m := currencyCode.FindStringIndex(after); m != nil && m[0] == 0 {
		return true
	}
	if m := currencyCode.FindAllStringIndex(before, -1); m != nil && m[len(m)-1][1] == len(before) {
		return true
	}
	return false
}

func findCurrency(text string) string {
	if m := currencyCode.FindString(text); m != "" {
		return m
	}
	for _, c := range currencySymbols {
		if strings.Contains(text, c.sign) {
			return c.code
		}
	}
	return ""
}

// Availability words, out of stock first: "nicht auf Lager" holds "auf
// Lager", "unavailable" holds "available".
var (
	outOfStockWords = []string{
		"outofstock", "out of stock", "out-of-stock", "not in stock", "no stock", "sold out", "soldout", "discontinued",
		"unavailable", "not available", "no longer available", "backorder", "preorder", "presale",
		"ausverkauft", "nicht auf lager", "nicht lieferbar", "nicht verfügbar", "vergriffen",
		"rupture de stock", "épuisé", "epuise", "indisponible", "non disponible", "en rupture",
		"agotado", "sin stock", "no disponible", "esaurito", "non disponibile", "niet op voorraad", "uitverkocht",
		"在庫切れ", "売り切れ", "缺货", "hết hàng",
	}
	inStockWords = []string{
		"instock", "in stock", "in-stock", "limitedavailability", "onlineonly", "instoreonly",
		"available", "add to cart", "add to basket",
		"auf lager", "lieferbar", "verfügbar", "sofort lieferbar",
		"en stock", "disponible", "en existencia", "disponibile", "op voorraad",
		"在庫あり", "有货", "còn hàng",
	}
)

// ParseAvailability reads an availability from a text: AvailInStock,
// AvailOutOfStock, or "" when it tells none. It reads schema.org's
// ItemAvailability ("https://schema.org/InStock", "OutOfStock";
// BackOrder, PreOrder, PreSale, SoldOut and Discontinued are out of
// stock: the item cannot be had now) and shop phrases in English,
// German, French, Spanish, Italian, Dutch, Japanese, Chinese and
// Vietnamese ("Auf Lager", "Ausverkauft", "Rupture de stock").
func ParseAvailability(text string) string {
	t := strings.ToLower(text)
	if i := strings.LastIndex(t, "schema.org/"); i >= 0 {
		t = t[i+len("schema.org/"):]
	}
	for _, w := range outOfStockWords {
		if strings.Contains(t, w) {
			return AvailOutOfStock
		}
	}
	for _, w := range inStockWords {
		if strings.Contains(t, w) {
			return AvailInStock
		}
	}
	return ""
}
