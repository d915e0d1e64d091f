module github.com/changedigest/changedigest

go 1.26

require (
	github.com/andybalholm/brotli v1.2.0
	github.com/fluhus/gostuff v1.4.0
	github.com/mmcdole/gofeed v1.4.2
	golang.org/x/net v0.57.0
	golang.org/x/text v0.40.0
)

require github.com/mmcdole/goxpp/v2 v2.0.0 // indirect
