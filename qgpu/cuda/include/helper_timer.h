/* helper_timer.h (qgpu): the CUDA samples' host timers, declared for parsing (qgpu does
 * not run host code; a launch's own time is in its result). */
#ifndef QGPU_HELPER_TIMER_H
#define QGPU_HELPER_TIMER_H
class StopWatchInterface {
 public:
  virtual ~StopWatchInterface() {}
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual void reset() = 0;
  virtual float getTime() = 0;
  virtual float getAverageTime() = 0;
};
bool sdkCreateTimer(StopWatchInterface **timer);
bool sdkDeleteTimer(StopWatchInterface **timer);
bool sdkStartTimer(StopWatchInterface **timer);
bool sdkStopTimer(StopWatchInterface **timer);
bool sdkResetTimer(StopWatchInterface **timer);
float sdkGetTimerValue(StopWatchInterface **timer);
float sdkGetAverageTimerValue(StopWatchInterface **timer);
#endif
