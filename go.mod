module github.com/changedigest/changedigest

go 1.26

require (
	github.com/andybalholm/brotli v1.2.0
	golang.org/x/net v0.57.0
	golang.org/x/text v0.40.0
)
