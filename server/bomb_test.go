package server

import (
	"net/http"
	"runtime"
	"syscall"
	"testing"
)

// BenchmarkProfileBomb uploads the nested-entity FOAF files with PUT
// /api/v1/profile and reports, besides the time and bytes allocated per
// upload, the process's peak resident memory (getrusage) and CPU time:
//
//	go test ./server -run XXX -bench ProfileBomb -benchmem -benchtime 20x
func BenchmarkProfileBomb(b *testing.B) {
	for _, name := range []string{"laughs9", "laughs10"} {
		b.Run(name, func(b *testing.B) {
			e := mustServer(b)
			c := e.api(e.mustUser("ann", "correct horse"))
			doc := []byte(mustReadFile(b, "../profile/testdata/bomb/"+name+".rdf"))
			runtime.GC()
			var before syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			b.ResetTimer()
			for b.Loop() {
				if resp, body := c.raw("PUT", "/profile", "application/rdf+xml", doc); resp.StatusCode != http.StatusBadRequest {
					b.Fatalf("%d %s", resp.StatusCode, body)
				}
			}
			var after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := func(r *syscall.Rusage) int64 { return r.Utime.Nano() + r.Stime.Nano() }
			b.ReportMetric(float64(cpu(&after)-cpu(&before))/float64(b.N)/1e6, "cpu-ms/op")
			b.ReportMetric(float64(after.Maxrss)/1024, "peak-rss-MB")
		})
	}
}
