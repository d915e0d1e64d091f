// Package segmenter cuts web pages into segments, signs each with an MD5,
// and finds and types the changes between two versions of a page: the
// detection engine of the Page Evolution Track (CaSePer, Kuppusamy and
// Aghila 2013, with Artail and Fawaz 2008 and Goel and Aggarwal).
//
// # Entry points
//
// DetectPage segments a new version against the stored previous one and
// returns a changedigest.Snapshot; DiffPages compares two bodies (the
// `changedigest diff` command); Detect and Diff dispatch pages and feeds
// by Sniff. NewSegments is the signature-matrix step; MainText extracts a
// page's main text for profiles.
//
// # Scanning
//
// A page is read once with the golang.org/x/net/html tokenizer into a flat
// list of significant tokens (start tags, void elements, end tags, text),
// each with its byte range in the body and a normalised form: tag names,
// attributes sorted by name with whitespace-collapsed values, end tags
// (implied ones too), text with whitespace (any Unicode space) collapsed
// and trimmed. Comments, doctypes, blank text, attribute order, quoting,
// character references and <br> vs <br/> do not reach the normalised
// form; script and style sources enter it as a digest of their collapsed
// text. The start tags open elements of a light DOM built with the few
// tree rules that shape structure (void elements, implied end tags, end
// tags closing what they enclose), each with three path keys (tag path,
// tag+id path, tag+id+index path). No *html.Node tree is built, except
// for a zone selector (cascadia works on one). Elements nest at most 512
// deep (a start tag past that closes the innermost element first, as
// browsers flatten such trees) and keep their first 256 attributes.
//
// # Segmentation
//
// The first version is cut by hybrid segmentation (CaSePer eq. 1–5): an
// element of at least δ nodes whose children include elements of that
// size is a container, each such child a segment of its own (recursively);
// the small children between them merge with the segment before them,
// unless together they reach δ. A large element whose children are all
// small is cut by densitometry: each child block gets Kohlschütter and
// Nejdl's text density (words per 80-column line), and a cut falls before
// a block-level child where the relative density slope to the blocks fused
// so far exceeds λ, or where they pass MaxSegment bytes (long prose has no
// slope to cut at, and a small edit should not mean comparing a whole
// article). Segments under δ/2 nodes merge with their predecessor (a
// segment of nothing but opening tags with its successor).
//
// Later versions are cut along the previous version's layout (its segment
// boundaries, serialised in Snapshot.Layout): each boundary is the path of
// its element plus its cascaded node sequence, a hash of the normalised
// tokens that open the segment. A boundary is found in the new version by
// cascade and path, by cascade, by path, or by id, and the longest run of
// boundaries found in page order is kept. A segment whose hash is new gets
// an extra boundary for each block of a boundary's kind, of δ nodes, whose
// words are mostly new (a new post on a blog's home page); a boundary
// whose element vanished is dropped. Segment counts so only move when
// blocks appear or disappear. Segments tile the body: their byte ranges
// are contiguous from 0 to its length (within zone elements when a zone
// is set).
//
// Choosing δ and λ: TestTune (go test ./segmenter -run Tune -tune -v)
// measures a grid of values on the test corpus. With δ = 20 nodes and
// λ = 0.7 the 222 versions of the pandasthumb home page, each cut along
// its predecessor's layout, change segment count 3 times (δ = 15: 8,
// δ = 30: 14, δ = 40: 43; only δ ≥ 80, which leaves 2 segments, does
// better), and cutting every version afresh changes the count 34 times
// (61 with λ = 0.5). On the 130 readability pages δ = 20, λ = 0.7 gives a
// median of 31 segments of 24 nodes, the largest holding 11% of a page.
//
// # Signature matrix and comparison
//
// A segment of the new version is changed only when its hash is absent
// from every row of the history (the hashes of the last m versions), so
// content flipping back does not count (CaSePer eq. 9–11). Runs of changed
// segments and the previous segments between the same two shared
// boundaries are compared in detail; the previous version's part is
// re-scanned from its stored byte range, with its ancestors as context.
// The two parts become small trees whose nodes carry Goel's bottom-up
// hashes. Children of matched nodes are matched by: a longest common
// subsequence of equal subtrees (equal subtrees are not descended into),
// equal subtrees out of order, the same id and tag (the X-Diff variant),
// the same subtree but for presentation, and finally, between those
// anchors, the same tag by word similarity (comparisons only between nodes
// of the same tag, as Artail and Fawaz). Matched children off the longest
// increasing run of positions are moves (node path sequences with
// offsets); equal subtrees deleted in one place and inserted in another
// are one move.
//
// Each change is typed (Goel and Aggarwal's classes): words changed in a
// block are content updates, one per run of changed words, each with the
// changed words as its old and new text and a few unchanged words around
// them (Change.Before and After; see excerpt.go); an
// element with text inserted or deleted is content; one without text
// (hr, img, an empty div) is structural, as are moves, renamed tags and
// changes of href or any other attribute that is not presentation; only
// presentation attributes (style, class, align, width, color, …), or
// formatting tags (b, font, span, …) around the same words, are cosmetic,
// as are style sheets; scripts (content or src), event-handler attributes
// and iframes, objects, embeds and applets are behavioural. For attribute
// changes the texts are the changed attributes (name="value"); for
// scripts, the tag and its source.
//
// Children with the same words and shape are matched before ids, so ids
// numbered by position do not shift a list's entries onto their
// neighbours; an element rebuilt with another tag but mostly the same
// words is one structural change and its text is compared word by word;
// text deleted from one element and inserted by its rebuilt neighbours at
// the same place is compared as text (reconcile.go); and every change
// that carries text is checked against the word diff of its group's
// visible text, so markup rebuilt around the same words is structural
// and shows its start tag, not the words (textpass.go). Groups end at
// segment boundaries, so a content insert or delete is also checked
// against the text of the nearest element around it that both versions
// have (a table row spanning several segments): cells whose words the
// row neither lost nor gained are markup (containerPass). A content
// update shows the part of a word that changed ("3.6" → "3.6.2"). Change
// texts are never cut unless MaxText is set, and then the change says so.
//
// Similarity is 1 minus the share of the two bodies' bytes the changes'
// texts account for.
//
// # Cost
//
// Any document up to MaxBytes is segmented and compared in time that
// grows in proportion to its size, whatever its markup: the light DOM is
// bounded as above, the scanner finds what end tags close without
// searching its stack, and the work that compares many things with many
// others is bounded per detection (the word-by-word comparisons of texts
// and the tables of children matched in order draw on budgets that grow
// with the size; feed items are scored against each other up to a fixed
// number of words), past which texts are compared as bags of words and
// children greedily. BenchmarkAdversarial measures hostile shapes (one
// tag of 100,000 attributes, 700,000 nested divs, a text of megabytes,
// hundreds of thousands of tiny segments, blocks rewritten wholesale) at
// 1 to 8 MB. DetectContext and DiffContext look at their context as they
// go (every 16,384 steps of work, about a millisecond) and stop with its
// error once it is done.
package segmenter
