module github.com/changedigest/changedigest

go 1.26

require (
	github.com/andybalholm/cascadia v1.3.3
	golang.org/x/net v0.57.0
)

require golang.org/x/text v0.40.0 // indirect
