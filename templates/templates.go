// Package templates holds the service's html/template files and style
// sheets, embedded in the binary. Package render parses them once at
// start-up; the server serves the static/ folder as it is.
//
// Layout of FS:
//
//	layout/base.html      the page frame: defines "base" (header, nav, flash
//	                      area, main, footer); calls "title", "head" and "content"
//	components/*.html     parts shared by pages, feed entries and the digest:
//	                      "change", "pieces", "parts", "sbs", "event-changes",
//	                      "csrf", "flash"; and by the web pages only (site.html):
//	                      "when", "when-cell", "types", "tags", "watch-status",
//	                      "recent-event", "watch-table", "copy", "form-error", "feed-head"
//	                      and "feed-alts" (an Atom address and its RSS and
//	                      JSON Feed twins)
//	pages/NAME.html       one web page each, rendered inside "base" as NAME
//	feed/entry.html       the HTML content of an Atom entry ("feed-entry")
//	mail/digest.html      the daily digest as a complete page ("digest"), also
//	                      the HTML body of the digest e-mail
//	mail/digest.txt       its plain-text alternative (text/template)
//	static/style.css      the site layout, small-screen first, no JavaScript
//	static/changes.css    the change list look; one class selector per rule,
//	                      so render can inline it into feed entries and mail
//	static/mail.css       the digest layout, inlined the same way
//
// Writing a page: add pages/NAME.html defining "content" and, when the
// title is not simply the Page's Title, "title"; "head" adds elements to
// <head>. Each page is parsed on its own copy of the layout and
// components, so every page may define the same names. Dot is a
// render.Page: .User (nil for visitors), .Nav (the active item:
// "dashboard", "add", "search", "digest", "profile", "settings",
// "users" (administrators' pages) or "login"), .Flash, .CSRF and
// .Data, the page's own values. Forms that POST write {{template "csrf" $}}
// (a hidden csrf_token field). Show changes with {{template
// "event-changes" EVENTVIEW}} or {{template "change" CHANGEVIEW}}, so
// pages, feeds and mail look alike, and give elements class names from
// the style sheets; pages carry no inline styles or scripts, so a strict
// Content-Security-Policy (default-src 'self') holds.
//
// Functions available to templates: url (a path under the site's path),
// abs (an absolute URL under the site), static (a static file's URL with
// a content version), site (the service name), date (UTC date and time),
// day (a long date), plural, runs, cls (class attribute; in feed and
// mail output also the inline style), and rssURL and jsonURL (the RSS and
// JSON Feed addresses of an Atom feed address).
//
// The layout links these routes, which the server must serve: / (the
// dashboard), /watches/new, /search, /digest, /profile, /settings, /login,
// POST /logout, /admin/users (for administrators),
// /static/ (this FS's static folder); the change views link
// /watches/ID, /watches/ID/versions/SEQ and /tags/TAG.
package templates

import "embed"

// FS holds every template and style sheet, under the folders listed above.
//
//go:embed layout components pages feed mail static
var FS embed.FS
