// Package tlsconf builds the TLS configurations of the tier's hops from PEM
// files: a node's certificate and key, and the CA bundle its peers'
// certificates must chain to. One Source serves a daemon's servers (mutual
// TLS: a client must present a certificate of the CA) and its clients (its
// own certificate, and the servers verified against the CA), and takes new
// files while the daemon runs (Source.Load, driven by package reload): new
// handshakes use them, established connections keep theirs.
//
// Servers pick the current files per handshake (tls.Config
// GetConfigForClient); clients present the current certificate
// (GetClientCertificate) and verify the server themselves against the
// current CA pool (VerifyConnection), since a tls.Config's RootCAs cannot
// change under a live transport. The verification is the standard one
// (x509.Certificate.Verify with the server's name and the server-auth
// usage), so nothing is skipped: the library's own check is off only
// because this one replaces it.
//
// A node's certificate serves both ends of a hop, so it should carry both
// the server-auth and client-auth extended key usages, and the names (DNS
// or IP) its peers dial it by, or one name shared by the tier
// (Config.ServerName).
package tlsconf
