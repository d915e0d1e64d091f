module github.com/changedigest/changedigest

go 1.26

require (
	golang.org/x/net v0.57.0
	golang.org/x/text v0.40.0
)
