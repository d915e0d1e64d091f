// Package changedigest holds the domain types every other package of the
// service shares: watches, snapshots and their segments, typed changes,
// users and their interest profiles, and the error codes. It imports nothing
// of the project; technology lives in the packages named after it
// (segmenter, pet, profile, expand, render, crawl, server).
package changedigest
