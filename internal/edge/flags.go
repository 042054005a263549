package edge

import "flag"

// BindFlags registers the limits' flags on fs, with d's values as
// defaults, and returns a function that copies into a Limits the flags
// that were set on the command line (so a configuration file's values
// stand unless a flag overrides them). Call it after fs.Parse.
func BindFlags(fs *flag.FlagSet, d Limits) func(*Limits) {
	v := d
	fs.Int64Var(&v.MaxBodyBytes, "max-body-bytes", d.MaxBodyBytes, "largest request body (HTTP) or message (gRPC) accepted; larger ones get 413")
	fs.IntVar(&v.MaxHeaderBytes, "max-header-bytes", d.MaxHeaderBytes, "largest request head (request line and headers) accepted; larger ones get 431")
	fs.DurationVar(&v.ReadHeaderTimeout, "read-header-timeout", d.ReadHeaderTimeout, "time a client has to send a request's headers (and finish the TLS handshake)")
	fs.DurationVar(&v.BodyTimeout, "body-timeout", d.BodyTimeout, "time a client has to send a request's body; a slower one gets 408 and is cut off")
	fs.DurationVar(&v.IdleTimeout, "idle-timeout", d.IdleTimeout, "idle keep-alive (HTTP) and call-less (gRPC) connections are closed after this")
	fs.IntVar(&v.MaxConcurrentStreams, "max-concurrent-streams", d.MaxConcurrentStreams, "most requests served at once per server (HTTP 503 / gRPC Unavailable past it)")
	fs.Int64Var(&v.MaxBufferedBytes, "max-buffered-bytes", d.MaxBufferedBytes, "request body bytes held at once, all requests together; past it 503 with Retry-After (0: unlimited, else at least --max-body-bytes)")
	fs.IntVar(&v.TenantMaxConcurrent, "tenant-max-concurrent", d.TenantMaxConcurrent, "requests in flight of a tenant whose key file entry sets no max_concurrent; past it 429 (0: unlimited)")
	return func(dst *Limits) {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "max-body-bytes":
				dst.MaxBodyBytes = v.MaxBodyBytes
			case "max-header-bytes":
				dst.MaxHeaderBytes = v.MaxHeaderBytes
			case "read-header-timeout":
				dst.ReadHeaderTimeout = v.ReadHeaderTimeout
			case "body-timeout":
				dst.BodyTimeout = v.BodyTimeout
			case "idle-timeout":
				dst.IdleTimeout = v.IdleTimeout
			case "max-concurrent-streams":
				dst.MaxConcurrentStreams = v.MaxConcurrentStreams
			case "max-buffered-bytes":
				dst.MaxBufferedBytes = v.MaxBufferedBytes
			case "tenant-max-concurrent":
				dst.TenantMaxConcurrent = v.TenantMaxConcurrent
			}
		})
	}
}
