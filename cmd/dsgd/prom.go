package main

// metricsListenUsage is --metrics-listen's usage line.
const metricsListenUsage = "serve Prometheus metrics on `HOST:PORT` at /metrics (an empty host is 127.0.0.1; a host beyond loopback must be given explicitly)"
