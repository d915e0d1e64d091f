package segmenter

import (
	"strings"

	"github.com/changedigest/changedigest"
	"github.com/changedigest/changedigest/internal/lazyregexp"
)

// Counters and relative times.
//
// "42 Kommentare" → "43 Kommentare", "vor 45 Minuten" → "vor 1 Stunde",
// "il y a 3 heures", "5 min ago", "3分钟前", "阅读 1234": an edit that only
// moves a count next to a counter word, or a time told relative to now,
// is what a page shows at every load, not news. It is noise from the
// first check (NoiseCounter), where a volatile location is learnt over
// many. Prices, scores and the dates of events carry no such words and
// are told.

// NoiseCounter is the reason of a change that only moves a counter or a
// relative time.
const NoiseCounter = "counter or relative time"

// The words, in the languages of the pages watched: English, German,
// French, Portuguese, Spanish, Italian, Dutch, Chinese and Japanese.
const (
	// timeUnits follow a number in a relative time.
	timeUnits = `(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|wks?|w|months?|mos?|years?|yrs?|y|` +
		`sekunden?|minuten?|stunden?|std|tage[n]?|tag|wochen?|monate[n]?|monat|jahre[n]?|jahr|` +
		`secondes?|heures?|jours?|semaines?|mois|ans?|années?|` +
		`segundos?|minutos?|horas?|dias?|días?|semanas?|mês|meses|anos?|años?|` +
		`secondi|minuti|ore|ora|giorni|giorno|settimane|mesi|anni|` +
		`seconden|minuten|uur|uren|dagen|weken|maanden|jaar)`
	// countNumber is a count as pages write it: 42, 1.234, 1,2k, einer.
	countNumber  = `(?:\d[\d.,  ]*\s*(?:k|m|mio|tsd)?\.?|an?|one|ein(?:er|em|e)?|une?|uma?|una?)`
	counterWords = `(?:comments?|replies|reply|views?|likes?|answers?|followers?|reads?|reactions?|visits?|` +
		`kommentare?|antworten|aufrufe|leser|` +
		`commentaires?|réponses?|vues?|` +
		`comentários?|comentarios?|respostas?|respuestas?|visualizações|visualizaciones|curtidas|` +
		`commenti|visualizzazioni|reacties|weergaven)`
	cjkCounter = `(?:评论|評論|回复|回覆|阅读|閱讀|浏览|瀏覽|点赞|點讚|转发|轉發|收藏|コメント|いいね)`
	cjkUnit    = `(?:秒|分钟|分鐘|分|小时|小時|時間|天|日|周|週|星期|个月|個月|ヶ月|月|年)`
)

// counterText matches the counters and relative times in lower-cased
// text; replaced, what is left of an edit that only moved them reads the
// same before and after.
var counterText = lazyregexp.New(`(?i)` +
	// vor 45 Minuten, il y a 3 heures, há 2 horas, hace 5 minutos, 5 min ago, 2 horas atrás, 3 uur geleden, 2 ore fa
	`(?:\b(?:vor|il\s+y\s+a|há|hace|seit)\s+` + countNumber + `\s*` + timeUnits + `\b|` +
	`\b` + countNumber + `\s*` + timeUnits + `\.?\s+(?:ago|atrás|geleden|fa)\b|` +
	// just now, gerade eben, à l'instant, agora mesmo, yesterday…
	`\b(?:just\s+now|gerade\s+eben|soeben|agora\s+mesmo|ahora\s+mismo|yesterday|gestern|hier|ontem|ayer|ieri|gisteren)\b|à\s+l['’]instant|` +
	// 3分钟前, 2小时前, 刚刚, 昨天
	`\d+\s*` + cjkUnit + `前|刚刚|剛剛|昨天|昨日|` +
	// 42 Kommentare, 42Kommentare, 1.2k views, Comments (42), 阅读 1234, 5条评论 (not
	// votes, points or shares: an election's, a match's, a market's)
	`\d[\d.,  ]*\s*(?:k|m|tsd)?\.?\s*` + counterWords + `\b|` +
	`\b` + counterWords + `\s*[:(]?\s*\d[\d.,  ]*\s*(?:k|m)?\)?|` +
	`\d[\d.,]*\s*(?:条|則|件)?` + cjkCounter + `(?:量|数|數)?|` +
	cjkCounter + `(?:量|数|數)?\s*[:：]?\s*\d[\d.,]*)`)

// maxCounterEdit bounds the bytes of either side of an edit that can be a
// counter's ("45 Minuten" → "1 Stunde"); a longer one tells more, and the
// expression is not run over it (a page of one huge text compared whole
// would cost seconds).
const maxCounterEdit = 80

// markCounters marks content updates that only move counters and
// relative times.
func markCounters(changes []changedigest.Change) {
	for i := range changes {
		c := &changes[i]
		if c.Noise != "" || c.Op != changedigest.OpUpdate || c.Type != changedigest.ChangeContent ||
			len(c.OldText) > maxCounterEdit || len(c.NewText) > maxCounterEdit {
			continue
		}
		if countersOnly(c.Before+c.OldText+c.After, c.Before+c.NewText+c.After) {
			c.Noise = NoiseCounter
		}
	}
}

// countersOnly reports whether old and new differ only in the counters
// and relative times they hold.
func countersOnly(old, new string) bool {
	o, n := strings.ToLower(old), strings.ToLower(new)
	if o == n {
		return false
	}
	ro, rn := counterText.ReplaceAllString(o, "\x00"), counterText.ReplaceAllString(n, "\x00")
	if ro == o && rn == n {
		return false // none
	}
	return strings.Join(strings.Fields(ro), " ") == strings.Join(strings.Fields(rn), " ")
}
