# Plot the simulator's timeline: requested (DESIRED) versus delivered
# performance per CPU over time, between t0 and t1 (0 0: everything).
#   gnuplot -e "timeline='T.txt'; out='T.png'; ncpus=2; t0=0; t1=0; what='...'" timeline.gp
set terminal pngcairo size 1100,260*ncpus+60 font ",10"
set output out
set multiplot layout ncpus,1 title sprintf("amd-pstate on the emulated CPPC platform (%s): requested vs delivered performance", what)
set xlabel "time since the simulator started (s)"
set ylabel "CPPC performance level"
set yrange [0:280]
if (t1 > t0) { set xrange [t0:t1] }
set grid
set key outside right
do for [c=0:ncpus-1] {
	set title sprintf("CPU %d", c)
	cmd = sprintf("< awk '!/^#/ && $2 == %d' %s", c, timeline)
	plot cmd using 1:($3 == 1 ? $4 : 1/0) with steps lw 5 lc rgb "#a0c0ff" title "requested (DESIRED)", \
	     cmd using 1:7 with steps lw 1.5 lc rgb "#c00000" title "delivered"
}
unset multiplot
