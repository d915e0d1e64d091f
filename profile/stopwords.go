package profile

import (
	"strings"
	"sync"
)

// stopWords are left out of key terms: English function words and words
// that fill web pages whatever their subject (navigation, dates,
// sharing). Words of fewer than three letters are dropped anyway.
var stopWords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, list := range []string{stopEnglish, stopWeb} {
		for _, w := range strings.Fields(list) {
			m[w] = true
		}
	}
	return m
})

const stopEnglish = `
about above across after afterwards again against all almost alone along already also although always
among amongst amount and another any anyhow anyone anything anyway anywhere are around
back became because become becomes becoming been before beforehand behind being below beside besides
between beyond both but call can cannot cant could couldn did didn does doesn doing don done down due during
each eight either eleven else elsewhere empty enough etc even ever every everyone everything everywhere except
few fifteen fifty fill find first five for former formerly forty four from front full further
get gets getting give given gives go goes going gone got had has hasn have haven having hence her here hereafter hereby
herein hereupon hers herself him himself his how however hundred into isn its itself just keep keeps kept
last latter latterly least less let lets like likely made make makes making many may maybe meanwhile might mine more moreover
most mostly move much must myself name namely neither never nevertheless next nine nobody none noone nor not
nothing now nowhere off often once one only onto other others otherwise our ours ourselves out over own
part per perhaps please put quite rather really said same say says see seem seemed seeming seems serious several
she should shouldn show side since sincere six sixty some somehow someone something sometime sometimes somewhere
still such take taken takes than that the their theirs them themselves then thence there thereafter thereby
therefore therein thereupon these they thing things third this those though three through throughout thru thus
together too top toward towards twelve twenty two under until upon used uses using very via was wasn way ways
well were weren what whatever when whence whenever where whereafter whereas whereby wherein whereupon wherever
whether which while whither who whoever whole whom whose why will with within without won would wouldn yet you
your yours yourself yourselves aren ain isn let lot lots new old use want wants wanted need needs good great
able actually already anyway around away come comes came know knows known think thought look looks looked
today yesterday tomorrow year years month months week weeks day days time times also via
january february march april june july august september october november december
monday tuesday wednesday thursday friday saturday sunday
`

const stopWeb = `
home homepage page pages menu navigation nav skip main content contents search login logout log sign signup
register account password username profile settings copyright rights reserved privacy policy terms cookie cookies
posted post posts comment comments reply replies read more click here link links share shares tweet twitter facebook
linkedin instagram youtube email mail subscribe rss feed feeds archive archives category categories tag tags
previous next older newer top bottom back view views edit permalink continue reading loading powered theme
wordpress blogger http https www com org net html php index site website update updated jump
follow followers like likes
`
