module github.com/changedigest/changedigest

go 1.26

require github.com/fluhus/gostuff v1.4.0
