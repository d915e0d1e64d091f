module github.com/changedigest/changedigest

go 1.26
