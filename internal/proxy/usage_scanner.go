package proxy

// UsageScanner finds the usage a response reports in its body fed in
// arbitrary pieces, as Forward does for its own calls: the last "usage"
// object of a JSON body or of a stream's chunks. Callers that see a
// response the proxy did not relay (a gateway's, in picker mode) use it so
// that both report the same Result.Usage. The zero value is ready; it is
// not safe for concurrent use.
type UsageScanner struct {
	s usageScanner
}

// Write scans p.
func (u *UsageScanner) Write(p []byte) { u.s.Write(p) }

// Usage returns the last usage seen, nil when none was.
func (u *UsageScanner) Usage() *Usage { return u.s.usage() }
