/* gnu/stubs-32.h (qgpu fallback, searched last): glibc's list of unimplemented functions
 * for i386, absent unless the 32-bit multilib is installed. qgpu's device compile is
 * 32-bit (-m32) against the 64-bit host's headers; nothing in this list is needed there. */
