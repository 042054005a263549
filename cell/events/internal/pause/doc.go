// Package pause holds the context-aware sleep the event transports use
// between retries.
package pause
