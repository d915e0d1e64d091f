// Package crawl fetches watched pages and decides when to fetch them again.
//
// # Fetching
//
// The Fetcher is a guarded HTTP client: one client with dial, TLS,
// response-header and overall timeouts; a context on every request;
// conditional GET (If-None-Match, If-Modified-Since; a 304 is a Response
// with NotModified set); its own gzip, deflate and br decoding with a cap
// on the decoded size and ratio (decompression bombs); charset conversion
// to UTF-8 (BOM, Content-Type, <meta>, XML declaration); at most
// MaxRedirects redirects with loop detection; a body cap; and a refusal of
// non-public addresses (private, loopback, link-local, CGNAT, ULA,
// multicast, ...) checked on the resolved IP of every connection, so that
// neither a redirect nor DNS rebinding gets around it, unless
// AllowPrivate is set.
//
// Failures are errors wrapping one of the package's sentinels (ErrDNS,
// ErrTimeout, ErrPrivateAddress, ErrTooLarge, ErrTooManyRedirects,
// ErrEmptyBody, ErrErrorPage, ...) or an *HTTPError carrying the status
// and Retry-After; tell them apart with errors.Is and errors.As. A failed
// fetch is never a version of the page.
//
// # Scheduling
//
// The Scheduler keeps every watch's due time. The first intervals come
// from the watch's category or its explicit Interval; after a few checks
// the interval follows the page's change rate, estimated as a Poisson
// rate from the check history with Cho and Garcia-Molina's estimators
// (EstimateRate), as a fraction of the mean time between changes, within
// bounds and with jitter (see Policy). Errors back off exponentially and
// a server's Retry-After is honoured. Each host gets one request at a time
// with a gap between requests, without holding up workers meant for other
// hosts, and a bounded pool of workers runs the checks until the context
// is cancelled.
//
// # Seams
//
// The scheduler sees the watch store through Store (DueWatches,
// SaveSchedule) and the check pipeline through Checker: a Check fetches
// (Fetch with WatchRequest(w)), and on success segments and stores the new
// version and returns its Outcome (Response.Outcome with Unchanged,
// Changed or FirstVersion); on failure it returns the error and stores
// nothing. The scheduler then updates and saves the watch's schedule
// state. Package crawltest has a loopback farm of changing pages and an
// in-memory store for tests.
package crawl
