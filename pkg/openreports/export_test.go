package openreports

// Head is head, for BenchmarkDigest's baseline.
var Head = head
