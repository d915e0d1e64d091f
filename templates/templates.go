// Package templates holds the service's html/template files and style
// sheets, embedded in the binary. Package render parses them once at
// start-up; the server serves the static/ folder as it is.
//
// Layout of FS:
//
//	layout/base.html      the page frame: defines "base" (header, nav, flash
//	                      area, main, footer); calls "title", "head" and "content"
//	components/*.html     parts shared by pages, feed entries and the digest:
//	                      "change", "pieces", "sbs", "event-changes", "csrf", "flash"
//	pages/NAME.html       one web page each; defines "content" (and may define
//	                      "title" and "head"); rendered inside "base" as NAME
//	feed/entry.html       the HTML content of an Atom entry ("feed-entry")
//	mail/digest.html      the daily digest as a complete page ("digest"), also
//	                      the HTML body of the digest e-mail
//	mail/digest.txt       its plain-text alternative (text/template)
//	static/style.css      the site layout, small-screen first, no JavaScript
//	static/changes.css    the change list look; one class selector per rule,
//	                      so render can inline it into feed entries and mail
//	static/mail.css       the digest layout, inlined the same way
package templates

import "embed"

// FS holds every template and style sheet, under the folders listed above.
//
//go:embed layout components pages feed mail static
var FS embed.FS
