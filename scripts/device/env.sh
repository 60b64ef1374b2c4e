# Sourced by the scripts that run on the GPU machine: the carried runtime and classpath.
# NVLink multicast stays off in everything started from here.
export NCCL_NVLS_ENABLE=0
c=.device-carry
JAVA="$c/jre/bin/java"
CP="$c/classes:$c/test-classes:$c/nc-classes:$c/nc-test-classes"
if [ -d "$c/ex-classes" ]; then CP="$CP:$c/ex-classes"; fi
CP="$CP:$(ls $c/lib/*.jar | tr '\n' ':')"
export CP JAVA
