//! EgoDyn: kinematics, the oracle, calibration and the stage's output, on scenes built from
//! analytic trajectories (`support`) and against the numpy/scipy reference.

mod egomotion_calibrate;
mod egomotion_oracle;
mod egomotion_output;
mod egomotion_reference;
mod egomotion_savgol;

mod support;
