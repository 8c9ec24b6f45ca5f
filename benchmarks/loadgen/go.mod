module promhpa.local/loadgen

go 1.26
