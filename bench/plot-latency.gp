# plot-latency.gp - time per check against the size of the filter, shmfilter
# beside each baseline; one key per call, and 100 keys per call.
#   gnuplot -e "dir='OUT'" bench/plot-latency.gp
# Data and styles: latency-*.dat and latency-*.style, written by report.py.
set terminal pngcairo size 1500,700 font ",10"
set output dir."/latency.png"
set datafile missing "?"
set key autotitle columnhead below maxrows 5 width -8
set logscale xy
set grid xtics ytics mytics
set xlabel "keys in the filter" offset 0,0.5
set ylabel "time per check, median (ns, log scale)"
set xtics ("100k" 1e5, "1M" 1e6, "10M" 1e7, "100M" 1e8)
set autoscale xfix
set offsets graph 0.08, graph 0.08, 0, 0
set multiplot layout 1,2 title "shmfilter against networked Redis: time per check (1% filters, 16-byte keys, about half present; solid: Bloom, dashed: cuckoo)" font ",13"
set title "one key per call (a round trip per key for the baselines)"
load dir."/latency-1.style"
plot for [i=2:words(lcs) + 1] dir."/latency-1.dat" using 1:i with linespoints lw 2 pt 7 lc rgb word(lcs, i - 1) dt int(word(dts, i - 1))
set title "100 keys per call (one round trip per 100 keys)"
load dir."/latency-100.style"
plot for [i=2:words(lcs) + 1] dir."/latency-100.dat" using 1:i with linespoints lw 2 pt 7 lc rgb word(lcs, i - 1) dt int(word(dts, i - 1))
unset multiplot
