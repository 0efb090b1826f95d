<?xml version="1.0" encoding="UTF-8"?>
<tileset version="1.10" tiledversion="1.10.2" name="hospital" tilewidth="32" tileheight="32" tilecount="184" columns="8">
 <image source="../assets/tiles/hospital_tiles.png" width="256" height="736"/>
 <tile id="0">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="floor_corridor"/>
  </properties>
 </tile>
 <tile id="1">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="floor_clinic"/>
  </properties>
 </tile>
 <tile id="2">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="floor_lab"/>
  </properties>
 </tile>
 <tile id="3">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="floor_wood"/>
  </properties>
 </tile>
 <tile id="4">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="floor_lobby"/>
  </properties>
 </tile>
 <tile id="5">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="floor_wood_dark"/>
  </properties>
 </tile>
 <tile id="6">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="grass"/>
  </properties>
 </tile>
 <tile id="7">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="grass_flowers"/>
  </properties>
 </tile>
 <tile id="8">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="path"/>
  </properties>
 </tile>
 <tile id="9">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="mat_l"/>
  </properties>
 </tile>
 <tile id="10">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="mat_r"/>
  </properties>
 </tile>
 <tile id="11">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="rug_tl"/>
  </properties>
 </tile>
 <tile id="12">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="rug_t"/>
  </properties>
 </tile>
 <tile id="13">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="rug_tr"/>
  </properties>
 </tile>
 <tile id="14">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="rug_l"/>
  </properties>
 </tile>
 <tile id="15">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="rug_c"/>
  </properties>
 </tile>
 <tile id="16">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="rug_r"/>
  </properties>
 </tile>
 <tile id="17">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="rug_bl"/>
  </properties>
 </tile>
 <tile id="18">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="rug_b"/>
  </properties>
 </tile>
 <tile id="19">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="rug_br"/>
  </properties>
 </tile>
 <tile id="20">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="door"/>
   <property name="name" value="door_h"/>
  </properties>
 </tile>
 <tile id="21">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="door"/>
   <property name="name" value="door_h_l"/>
  </properties>
 </tile>
 <tile id="22">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="door"/>
   <property name="name" value="door_h_r"/>
  </properties>
 </tile>
 <tile id="23">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="door"/>
   <property name="name" value="door_v"/>
  </properties>
 </tile>
 <tile id="24">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="door"/>
   <property name="name" value="door_front_l"/>
  </properties>
 </tile>
 <tile id="25">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="door"/>
   <property name="name" value="door_front_r"/>
  </properties>
 </tile>
 <tile id="26">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_cap_0"/>
  </properties>
 </tile>
 <tile id="27">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_cap_n"/>
  </properties>
 </tile>
 <tile id="28">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_cap_w"/>
  </properties>
 </tile>
 <tile id="29">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_cap_nw"/>
  </properties>
 </tile>
 <tile id="30">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_cap_e"/>
  </properties>
 </tile>
 <tile id="31">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_cap_ne"/>
  </properties>
 </tile>
 <tile id="32">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_cap_we"/>
  </properties>
 </tile>
 <tile id="33">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_cap_nwe"/>
  </properties>
 </tile>
 <tile id="34">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_face_0"/>
  </properties>
 </tile>
 <tile id="35">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_face_n"/>
  </properties>
 </tile>
 <tile id="36">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_face_w"/>
  </properties>
 </tile>
 <tile id="37">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_face_nw"/>
  </properties>
 </tile>
 <tile id="38">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_face_e"/>
  </properties>
 </tile>
 <tile id="39">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_face_ne"/>
  </properties>
 </tile>
 <tile id="40">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_face_we"/>
  </properties>
 </tile>
 <tile id="41">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_face_nwe"/>
  </properties>
 </tile>
 <tile id="42">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_ext_0"/>
  </properties>
 </tile>
 <tile id="43">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_ext_n"/>
  </properties>
 </tile>
 <tile id="44">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_ext_w"/>
  </properties>
 </tile>
 <tile id="45">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_ext_nw"/>
  </properties>
 </tile>
 <tile id="46">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_ext_e"/>
  </properties>
 </tile>
 <tile id="47">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_ext_ne"/>
  </properties>
 </tile>
 <tile id="48">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_ext_we"/>
  </properties>
 </tile>
 <tile id="49">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_ext_nwe"/>
  </properties>
 </tile>
 <tile id="50">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_face_window"/>
  </properties>
 </tile>
 <tile id="51">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="wall"/>
   <property name="name" value="wall_ext_window"/>
  </properties>
 </tile>
 <tile id="52">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="sign_redcross"/>
  </properties>
 </tile>
 <tile id="53">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="sign_hospital_l"/>
  </properties>
 </tile>
 <tile id="54">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="sign_hospital_r"/>
  </properties>
 </tile>
 <tile id="55">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_consult_1"/>
  </properties>
 </tile>
 <tile id="56">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_consult_2"/>
  </properties>
 </tile>
 <tile id="57">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_consult_3"/>
  </properties>
 </tile>
 <tile id="58">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_ecg"/>
  </properties>
 </tile>
 <tile id="59">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_lab"/>
  </properties>
 </tile>
 <tile id="60">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_ward"/>
  </properties>
 </tile>
 <tile id="61">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_xray"/>
  </properties>
 </tile>
 <tile id="62">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_ct_mri"/>
  </properties>
 </tile>
 <tile id="63">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_reception"/>
  </properties>
 </tile>
 <tile id="64">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_waiting"/>
  </properties>
 </tile>
 <tile id="65">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_conference"/>
  </properties>
 </tile>
 <tile id="66">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="plaque_records"/>
  </properties>
 </tile>
 <tile id="67">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="whiteboard_l"/>
  </properties>
 </tile>
 <tile id="68">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="whiteboard_r"/>
  </properties>
 </tile>
 <tile id="69">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="tv"/>
  </properties>
 </tile>
 <tile id="70">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="xray_viewer"/>
  </properties>
 </tile>
 <tile id="71">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="eye_chart"/>
  </properties>
 </tile>
 <tile id="72">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="clock"/>
  </properties>
 </tile>
 <tile id="73">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="sign_radiation"/>
  </properties>
 </tile>
 <tile id="74">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="notice_board"/>
  </properties>
 </tile>
 <tile id="75">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="sanitizer"/>
  </properties>
 </tile>
 <tile id="76">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="fire_extinguisher"/>
  </properties>
 </tile>
 <tile id="77">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="exit_sign"/>
  </properties>
 </tile>
 <tile id="78">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="painting_landscape"/>
  </properties>
 </tile>
 <tile id="79">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="sign"/>
   <property name="name" value="painting_flowers"/>
  </properties>
 </tile>
 <tile id="80">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="sanitizer_stand"/>
  </properties>
 </tile>
 <tile id="81">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="seat"/>
   <property name="name" value="chair_down"/>
  </properties>
 </tile>
 <tile id="82">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="seat"/>
   <property name="name" value="chair_up"/>
  </properties>
 </tile>
 <tile id="83">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="seat"/>
   <property name="name" value="chair_left"/>
  </properties>
 </tile>
 <tile id="84">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="seat"/>
   <property name="name" value="chair_right"/>
  </properties>
 </tile>
 <tile id="85">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="seat"/>
   <property name="name" value="office_chair_down"/>
  </properties>
 </tile>
 <tile id="86">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="seat"/>
   <property name="name" value="office_chair_up"/>
  </properties>
 </tile>
 <tile id="87">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="seat"/>
   <property name="name" value="office_chair_left"/>
  </properties>
 </tile>
 <tile id="88">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="seat"/>
   <property name="name" value="office_chair_right"/>
  </properties>
 </tile>
 <tile id="89">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="reception_l"/>
  </properties>
 </tile>
 <tile id="90">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="reception_m"/>
  </properties>
 </tile>
 <tile id="91">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="reception_r"/>
  </properties>
 </tile>
 <tile id="92">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="reception_pc"/>
  </properties>
 </tile>
 <tile id="93">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="reception_info"/>
  </properties>
 </tile>
 <tile id="94">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="desk_l"/>
  </properties>
 </tile>
 <tile id="95">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="desk_r"/>
  </properties>
 </tile>
 <tile id="96">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="desk_pc_l"/>
  </properties>
 </tile>
 <tile id="97">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="desk_pc_r"/>
  </properties>
 </tile>
 <tile id="98">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="exam_bed_top"/>
  </properties>
 </tile>
 <tile id="99">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="exam_bed_bottom"/>
  </properties>
 </tile>
 <tile id="100">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="bed_top"/>
  </properties>
 </tile>
 <tile id="101">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="bed_bottom"/>
  </properties>
 </tile>
 <tile id="102">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="plant_big"/>
  </properties>
 </tile>
 <tile id="103">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="plant_small"/>
  </properties>
 </tile>
 <tile id="104">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="plant_tall"/>
  </properties>
 </tile>
 <tile id="105">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="bookshelf"/>
  </properties>
 </tile>
 <tile id="106">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="filing_cabinet"/>
  </properties>
 </tile>
 <tile id="107">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="binder_shelf"/>
  </properties>
 </tile>
 <tile id="108">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="table_tl"/>
  </properties>
 </tile>
 <tile id="109">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="table_tr"/>
  </properties>
 </tile>
 <tile id="110">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="table_ml"/>
  </properties>
 </tile>
 <tile id="111">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="table_mr"/>
  </properties>
 </tile>
 <tile id="112">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="table_bl"/>
  </properties>
 </tile>
 <tile id="113">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="table_br"/>
  </properties>
 </tile>
 <tile id="114">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="coffee_table_l"/>
  </properties>
 </tile>
 <tile id="115">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="coffee_table_r"/>
  </properties>
 </tile>
 <tile id="116">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="bedside_table"/>
  </properties>
 </tile>
 <tile id="117">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="medicine_cabinet"/>
  </properties>
 </tile>
 <tile id="118">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="water_cooler"/>
  </properties>
 </tile>
 <tile id="119">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="vending_machine"/>
  </properties>
 </tile>
 <tile id="120">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="trash_bin"/>
  </properties>
 </tile>
 <tile id="121">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="coat_rack"/>
  </properties>
 </tile>
 <tile id="122">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="stool"/>
  </properties>
 </tile>
 <tile id="123">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="toy_blocks"/>
  </properties>
 </tile>
 <tile id="124">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="aquarium_l"/>
  </properties>
 </tile>
 <tile id="125">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="aquarium_r"/>
  </properties>
 </tile>
 <tile id="126">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="brochure_rack"/>
  </properties>
 </tile>
 <tile id="127">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="sink"/>
  </properties>
 </tile>
 <tile id="128">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="lab_bench"/>
  </properties>
 </tile>
 <tile id="129">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="lab_bench_end_l"/>
  </properties>
 </tile>
 <tile id="130">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="lab_bench_end_r"/>
  </properties>
 </tile>
 <tile id="131">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="lab_bench_microscope"/>
  </properties>
 </tile>
 <tile id="132">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="lab_bench_tubes"/>
  </properties>
 </tile>
 <tile id="133">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="lab_bench_sink"/>
  </properties>
 </tile>
 <tile id="134">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="lab_bench_centrifuge"/>
  </properties>
 </tile>
 <tile id="135">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="lab_fridge"/>
  </properties>
 </tile>
 <tile id="136">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="biohazard_bin"/>
  </properties>
 </tile>
 <tile id="137">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="ecg_machine"/>
  </properties>
 </tile>
 <tile id="138">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="iv_stand"/>
  </properties>
 </tile>
 <tile id="139">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="wheelchair"/>
  </properties>
 </tile>
 <tile id="140">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="xray_l"/>
  </properties>
 </tile>
 <tile id="141">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="xray_r"/>
  </properties>
 </tile>
 <tile id="142">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="lead_screen"/>
  </properties>
 </tile>
 <tile id="143">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="apron_rack"/>
  </properties>
 </tile>
 <tile id="144">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="privacy_curtain"/>
  </properties>
 </tile>
 <tile id="145">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="med_cart"/>
  </properties>
 </tile>
 <tile id="146">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="scanner_tl"/>
  </properties>
 </tile>
 <tile id="147">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="scanner_tr"/>
  </properties>
 </tile>
 <tile id="148">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="scanner_bl"/>
  </properties>
 </tile>
 <tile id="149">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="scanner_br"/>
  </properties>
 </tile>
 <tile id="150">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="scanner_table_l"/>
  </properties>
 </tile>
 <tile id="151">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="scanner_table_r"/>
  </properties>
 </tile>
 <tile id="152">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="console_l"/>
  </properties>
 </tile>
 <tile id="153">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="equipment"/>
   <property name="name" value="console_r"/>
  </properties>
 </tile>
 <tile id="154">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="plant"/>
   <property name="name" value="hedge"/>
  </properties>
 </tile>
 <tile id="155">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="plant"/>
   <property name="name" value="bush"/>
  </properties>
 </tile>
 <tile id="156">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="plant"/>
   <property name="name" value="tree_tl"/>
  </properties>
 </tile>
 <tile id="157">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="plant"/>
   <property name="name" value="tree_tr"/>
  </properties>
 </tile>
 <tile id="158">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="plant"/>
   <property name="name" value="tree_bl"/>
  </properties>
 </tile>
 <tile id="159">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="plant"/>
   <property name="name" value="tree_br"/>
  </properties>
 </tile>
 <tile id="160">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="bench_l"/>
  </properties>
 </tile>
 <tile id="161">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="bench_r"/>
  </properties>
 </tile>
 <tile id="162">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="furniture"/>
   <property name="name" value="lamp_post"/>
  </properties>
 </tile>
 <tile id="163">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="plant"/>
   <property name="name" value="flower_bed"/>
  </properties>
 </tile>
 <tile id="164">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="asphalt"/>
  </properties>
 </tile>
 <tile id="165">
  <properties>
   <property name="collides" type="bool" value="false"/>
   <property name="kind" value="floor"/>
   <property name="name" value="asphalt_line"/>
  </properties>
 </tile>
 <tile id="166">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="ambulance_tl"/>
  </properties>
 </tile>
 <tile id="167">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="ambulance_tr"/>
  </properties>
 </tile>
 <tile id="168">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="ambulance_ml"/>
  </properties>
 </tile>
 <tile id="169">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="ambulance_mr"/>
  </properties>
 </tile>
 <tile id="170">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="ambulance_bl"/>
  </properties>
 </tile>
 <tile id="171">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="ambulance_br"/>
  </properties>
 </tile>
 <tile id="172">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_red_tl"/>
  </properties>
 </tile>
 <tile id="173">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_red_tr"/>
  </properties>
 </tile>
 <tile id="174">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_red_ml"/>
  </properties>
 </tile>
 <tile id="175">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_red_mr"/>
  </properties>
 </tile>
 <tile id="176">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_red_bl"/>
  </properties>
 </tile>
 <tile id="177">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_red_br"/>
  </properties>
 </tile>
 <tile id="178">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_blue_tl"/>
  </properties>
 </tile>
 <tile id="179">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_blue_tr"/>
  </properties>
 </tile>
 <tile id="180">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_blue_ml"/>
  </properties>
 </tile>
 <tile id="181">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_blue_mr"/>
  </properties>
 </tile>
 <tile id="182">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_blue_bl"/>
  </properties>
 </tile>
 <tile id="183">
  <properties>
   <property name="collides" type="bool" value="true"/>
   <property name="kind" value="vehicle"/>
   <property name="name" value="car_blue_br"/>
  </properties>
 </tile>
</tileset>
