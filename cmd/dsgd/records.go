package main

// metricsUsage is --metrics's usage line.
const metricsUsage = "write the run's records to `FILE`: one per iteration per worker (kind train: time, iter, epoch, images, lr, loss, phase times) and one per test net per test pass (kind test: its outputs), as JSON lines, or as CSV when FILE ends in .csv; --resume appends to it (a worker process of rank N > 0 writes FILE.rankN)"

// logUsage is --log's usage line.
const logUsage = "write a training log shaped like Caffe's (glog lines of solver.cpp: \"Iteration N ..., loss = L\", \"Test net output #0: accuracy = A\", \"Iteration N, lr = R\") to `FILE`, which Caffe's tools/extra/parse_log.py and plot_training_log.py read; rank 0 writes it, --resume appends to it"
