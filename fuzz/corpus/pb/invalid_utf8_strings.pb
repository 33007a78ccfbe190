
 

-/job:localhost/replica:0/task:0/device:CPU:0ÿ6
badÿnameè(
2

cpuÿ@@Bbadÿname = MatMul(a, b)P'
cleanü(Bclean = Add(badâ‚¬name)Pworkerÿ