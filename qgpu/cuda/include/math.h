/* math.h (qgpu): host declarations for parsing only (qgpu is an integer machine; device
 * floating point is refused where it is used). */
#ifndef QGPU_MATH_H
#define QGPU_MATH_H
extern "C" {
double sqrt(double); double fabs(double); double pow(double, double); double exp(double);
double log(double); double floor(double); double ceil(double); double sin(double);
double cos(double);
}
#endif
