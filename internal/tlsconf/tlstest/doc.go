// Package tlstest makes throwaway certificate authorities and certificates
// for tests of mutual TLS (tlsconf.EphemeralCA, failing the test on
// error): nothing it makes outlives the test, and no private key is ever
// committed. It is for tests only, in the manner of net/http/httptest.
package tlstest
