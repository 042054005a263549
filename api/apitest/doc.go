// Package apitest holds checks of the api package's documents that the
// daemons' tests share: CheckDocument checks an OpenAPI document as a
// daemon serves it. Only tests import it.
package apitest
